import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../util/atomic-write.js';

/*
 * How berth up asks its agents to stop: a file in the shared run directory, not a line on
 * srun's stdin. srun (--input=all) forwards stdin to every node's slurmstepd; an agent that
 * ends on its own (a failed or done node) closes its slurmstepd's I/O connection, and stdin
 * forwarded to it at that moment gets the connection reset. srun takes that for an I/O error
 * and aborts the whole step ("step_launch_notify_io_failure: aborting, io error with
 * slurmstepd on node N"), killing every other agent before it stops its services or writes
 * its final node file. So nothing is ever written to srun's stdin: its EOF (berth up gone)
 * is the only thing the agents read there.
 */

const POLL_MS = 100;

export const STOP_FILE = 'agents.stop';
const stopPath = (runDir: string): string => join(runDir, STOP_FILE);

/** Every agent of the run directory is asked to stop (each stops its services dependents first). */
export function requestAgentsStop(runDir: string): void {
  writeFileAtomic(stopPath(runDir), `${new Date().toISOString()}\n`, 0o600);
}

/** Calls `onStop` once the stop file appears; returns the function that stops watching. */
export function watchAgentsStop(runDir: string, onStop: () => void, pollMs = POLL_MS): () => void {
  const timer = setInterval(() => {
    if (!existsSync(stopPath(runDir))) return;
    clearInterval(timer);
    onStop();
  }, pollMs);
  // Watching alone must not keep an agent that is done alive.
  timer.unref();
  return () => clearInterval(timer);
}
