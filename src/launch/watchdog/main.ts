import { watch } from './watch.js';

/*
 * The watchdog program (berth-side.ts starts it with berth's pid and the pipe as stdin). Marking a dead
 * stack's run directories is the stack's business (stack/record/run-gone.ts), given by cli/watchdog-entry.ts.
 */
export async function watchdogMain(berthPid: number, markRunDir: (dir: string, berthPid: number) => unknown): Promise<number> {
  // In a session of its own already; a hangup or Ctrl-C meant for berth's terminal is not for it.
  process.on('SIGINT', () => {});
  process.on('SIGHUP', () => {});
  await watch(process.stdin, { markRunDir: (dir) => markRunDir(dir, berthPid) });
  return 0;
}
