import { expandHostlist } from '../../slurm/hostlist.js';

/*
 * srun's own line when tasks of its step end abnormally, at once in agents.log:
 *   srun: error: n2: task 1: Killed
 *   srun: error: n[2-3]: tasks 1-2: Exited with exit code 70
 * An agent exits only after its stdin ends (agents-step.ts), so such a line before berth up
 * closed it means the node's agent is gone: the node failed. No process an agent starts
 * inherits its stdout/stderr, so srun says it at once, not when the services end. Agents' own
 * lines are prefixed "[node] ": none can pass for srun's.
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
