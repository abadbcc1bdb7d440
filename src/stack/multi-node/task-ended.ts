import { expandHostlist } from '../../slurm/hostlist.js';

/*
 * srun's own line when tasks of its step end abnormally, written at once to the step's output
 * (agents.log) while the other tasks run on (--kill-on-bad-exit=0):
 *   srun: error: n2: task 1: Killed
 *   srun: error: n[2-3]: tasks 1-2: Exited with exit code 70
 * An agent exits only after the end of its stdin (agents-step.ts), so such a line before berth
 * up closed that stdin means the node's agent is gone (killed, crashed, its node lost): the
 * node failed. srun prints it on the first node, so no shared filesystem delays it.
 * Agents' own lines are prefixed "[node] " (prefix-lines.ts): none can pass for srun's.
 * srun says it once the task's process has exited and its stdout and stderr are closed: no
 * process an agent starts inherits them (services and probes get pipes, the watchdog none),
 * so a killed agent is reported at once, not when its services end.
 */

const TASKS_ENDED = /^srun: error: (\S+): tasks? [\d,-]+: (.+)$/;

/** The nodes and srun's words ("Killed", "Exited with exit code 70") of such a line; undefined for any other. */
export function tasksEnded(line: string): { nodes: string[]; how: string } | undefined {
  const m = TASKS_ENDED.exec(line.trimEnd());
  if (!m) return undefined;
  try {
    return { nodes: expandHostlist(m[1]!), how: m[2]! };
  } catch {
    return undefined; // not a hostlist: not srun's line
  }
}
