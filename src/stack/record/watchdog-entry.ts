// dist/watchdog.cjs: `node dist/watchdog.cjs BERTH_PID` (see watchdog-main.ts).
import { watchdogMain } from './watchdog-main.js';

void watchdogMain(Number(process.argv[2])).then((code) => process.exit(code));
