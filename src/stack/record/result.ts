import type { WriteFailure } from './write-failures.js';

/* How a run ended (StackResult), in the record's words, so that run/ and record/ agree. */

/** A service's shared ports and where they are reached: one shape for the record and a replica's context (file/ is below record/). */
export type { SharedPorts } from '../file/replica-context.js';

export interface StackFailure {
  service: string;
  replica: number;
  /** The class berth exits with: 69 no port, 70 failed, 75 not ready in time (64/74 rarely). */
  exitCode: number;
  /** What happened, without the diagnostics note. */
  reason: string;
  /** The replica's diagnostics folder (diagnostics.json, stdout.log, stderr.log), when written. */
  diagnostics?: string;
  bundle?: string;
  logs: { out: string; err: string };
}

export interface StackResult {
  /** What `berth up` exits with. */
  exitCode: number;
  /**
   * job: the job exited (exitCode is its status); failed: a service failed for good;
   * signal: stopped by a signal (128+N); stopped: stop() without a signal (0);
   * completed: no job, and every service exited 0.
   */
  reason: 'job' | 'failed' | 'signal' | 'stopped' | 'completed';
  signal?: NodeJS.Signals;
  failure?: StackFailure;
  /** The job's end: the first failing rank's (replica's) status, or 0 when every rank exited 0. */
  job?: { service: string; replica: number; status: number; code: number | null; signal: NodeJS.Signals | null };
  runDir: string;
  /** ms from runStack() until every non-job service was ready, when that happened. */
  readyMs?: number;
  /** Writes that failed while it ran (a full disk), each file once: then exitCode is 74 where it would be 0. */
  writeFailures?: WriteFailure[];
}
