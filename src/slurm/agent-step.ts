import { compressHostlist } from './hostlist.js';

export interface AgentStepOptions {
  /** Nodes to run one agent on each (the first N of the allocation). */
  nodes: readonly string[];
  /** The agent's argv (e.g. [node, /path/berth.js, up, STACK, --agent, RUN]). */
  agent: readonly string[];
}

/**
 * The srun argv that starts the agents: one task per node (--ntasks-per-node=1), sharing the
 * job's resources with the batch step (--overlap), on the named nodes. A failed agent does
 * not make srun kill the others (--kill-on-bad-exit=0): berth up stops them in order.
 */
export function agentStepArgv(o: AgentStepOptions): string[] {
  const n = String(o.nodes.length);
  return [
    'srun',
    `--nodes=${n}`,
    `--ntasks=${n}`,
    '--ntasks-per-node=1',
    `--nodelist=${compressHostlist(o.nodes)}`,
    '--overlap',
    '--kill-on-bad-exit=0',
    '--job-name=berth-agents',
    '--',
    ...o.agent,
  ];
}
