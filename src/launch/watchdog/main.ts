import { watch } from './watch.js';

/*
 * The watchdog program: started by berth-side.ts with berth's pid and a pipe from berth as
 * stdin (as dist/watchdog.cjs, or as `berth up --watchdog PID` inside the single executable,
 * which has no files next to it). It stops what berth left running when that pipe closes
 * (watch.ts), then marks the stacks' run directories with `markRunDir`: the stack's business
 * (stack/record/run-gone.ts), so given by the program's entry above (cli/watchdog-entry.ts, up.ts).
 */
export async function watchdogMain(berthPid: number, markRunDir: (dir: string, berthPid: number) => unknown): Promise<number> {
  // In a session of its own already; a hangup or Ctrl-C meant for berth's terminal is not for it.
  process.on('SIGINT', () => {});
  process.on('SIGHUP', () => {});
  await watch(process.stdin, { markRunDir: (dir) => markRunDir(dir, berthPid) });
  return 0;
}
