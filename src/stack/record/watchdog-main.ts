import { watch } from '../../launch/watchdog-process.js';
import { markRunGone } from './run-gone.js';

/*
 * The watchdog program: started by src/launch/watchdog.ts with berth's pid and a pipe from
 * berth as stdin (as dist/watchdog.cjs, or as `berth up --watchdog PID` inside the single
 * executable, which has no files next to it). It stops what berth left running when that
 * pipe closes (watchdog-process.ts), then marks the stacks' run directories (run-gone.ts).
 * It lives here, not in launch/, because marking a run directory is the stack's business.
 */
export async function watchdogMain(berthPid: number): Promise<number> {
  // In a session of its own already; a hangup or Ctrl-C meant for berth's terminal is not for it.
  process.on('SIGINT', () => {});
  process.on('SIGHUP', () => {});
  await watch(process.stdin, {
    afterStop: (runDirs) => {
      for (const dir of runDirs) {
        try {
          markRunGone(dir, berthPid);
        } catch {
          // unwritable: the dead pid in the document still tells readers
        }
      }
    },
  });
  return 0;
}
