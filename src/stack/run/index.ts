/*
 * run/: one running stack on this host. orchestrate.ts (runStack) starts it; the phases
 * (reserve-ports, schedule, start-attempt, replica-events, restart, teardown) each record
 * what happened to a replica and report it (happened.ts), and next.ts alone decides what
 * comes next: start what may start, restart, or end the stack. stack-run.ts holds their
 * shared state (and what it refuses before anything starts); replica.ts a replica's;
 * stack-handle.ts the library's options and handle.
 * May import: ../file/, ../record/, src/launch, src/allocate, src/slurm, src/host,
 * src/util, src/errors; never ../multi-node/.
 */
export { runStack } from './orchestrate.js';
export type { RunStackOptions, StackFailure, StackHandle, StackResult } from './orchestrate.js';
