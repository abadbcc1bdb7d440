import type { ExitInfo } from '../../launch/launch-api.js';
import type { StackResult } from '../record/result.js';
import type { Replica, Service } from './replica.js';

/* What the phases of a running stack report instead of calling each other (next.ts decides what follows). */
export type Happened =
  /** Something may start now: a replica started, ready or completed, the ports reserved, an external service or a service's peers known. */
  | { kind: 'progress' }
  /** An attempt failed (its 'failed' event, a crash once ready, a restart without its ports). `ended`: no exit is still to come. */
  | { kind: 'attempt-failed'; rep: Replica; exitCode: number; reason: string; bundle?: string | undefined; ended: boolean }
  /** A rank (replica) of the job exited, not asked to. */
  | { kind: 'rank-exited'; rep: Replica; info: ExitInfo }
  /** A restart's pause is over and its ports are held again: the next attempt may start. */
  | { kind: 'restart-due'; rep: Replica }
  /** A job's old generation is gone and the next one's ports are ready: every rank starts again (generation.ts). */
  | { kind: 'generation-due'; svc: Service }
  /** A restarted replica is ready on other learned ports than its dependents were given (`moved`: "api 40001 → 40117"). */
  | { kind: 'learned-moved'; rep: Replica; moved: string }
  /** A dependent stopped because a port it was given moved (learned-moved): its next attempt. */
  | { kind: 'refresh-stopped'; rep: Replica; reason: string }
  /** The stack ends (its failure, if any, is recorded in StackRun.failure). */
  | { kind: 'end'; reason: StackResult['reason'] };
