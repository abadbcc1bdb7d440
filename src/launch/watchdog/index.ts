/*
 * watchdog/: the process that stops a berth's services and ends their leases when berth dies
 * without cleaning up (SIGKILL, OOM), one per berth process. berth's side (guard.ts: what each
 * launch and stack registers; berth-side.ts: start and feed it; program.ts: where its program
 * is; lease-handoff.ts: the lease sockets it is sent), what they say (protocol.ts), and the
 * process itself (main.ts; watch.ts: its loop; state.ts; stop-run.ts; kept-leases.ts).
 * May import: ../process-tree.ts, src/host, src/util; never the rest of launch/ (which uses
 * it), src/stack or src/cli: the program's entry (cli/watchdog-entry.ts, `up --watchdog`)
 * gives it the stack's marking of a dead run's directory.
 */
export { guardRun, guardRunDir, type RunGuard } from './guard.js';
export { useWatchdogEntry } from './program.js';
export { watchdogMain } from './main.js';
