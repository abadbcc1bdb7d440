// dist/watchdog.cjs: `node dist/watchdog.cjs BERTH_PID`, the watchdog of a berth process (launch/watchdog/main.ts).
import { watchdogMain } from '../launch/watchdog/main.js';
import { markRunGone } from '../stack/record/run-gone.js';

void watchdogMain(Number(process.argv[2]), markRunGone).then((code) => process.exit(code));
