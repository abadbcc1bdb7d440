/*
 * watchdog/: the process that stops a berth's services and ends their leases when berth dies
 * without cleaning up (protocol.ts says how). berth's side: guard.ts, berth-side.ts, program.ts,
 * lease-handoff.ts; the process: main.ts, watch.ts, state.ts, stop-run.ts, kept-leases.ts.
 * May import: ../process-tree.ts, src/host, src/util; never the rest of launch/ (which uses
 * it), src/stack or src/cli: the program's entry (cli/watchdog-entry.ts, `up --watchdog`)
 * gives it the stack's marking of a dead run's directory.
 */
export { guardRun, guardRunDir, type RunGuard } from './guard.js';
export { useWatchdogEntry } from './program.js';
export { watchdogMain } from './main.js';
