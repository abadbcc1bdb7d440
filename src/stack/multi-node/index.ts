/*
 * multi-node/: multi-node stacks (`nodes: all | N | others`) inside a Slurm allocation. `berth up` on the
 * first node becomes the coordinator (coordinator.ts):
 *   1. it starts one berth agent per node in a single step, `srun --ntasks-per-node=1
 *      --overlap … berth up STACK --agent RUN_DIR` (Slurm launches them: no ssh, no daemon);
 *   2. each agent (agent.ts) runs its node's `nodes:` services with the ordinary orchestrator,
 *      in RUN_DIR/nodes/<node>/, and reports through RUN_DIR/nodes/<node>.json (node-files.ts);
 *   3. the first node's other services start at once, here; those that depend on `nodes:`
 *      services wait until every node is ready, and agents wait for theirs here through
 *      RUN_DIR/endpoints.json (local-deps.ts);
 *   4. RUN_DIR/endpoints.json, events.jsonl and the status view carry every node's replicas;
 *      a node that fails, or an agent that is gone (task-ended.ts), stops everything;
 *   5. a `nodes:` job with restart: on-failure restarts as a group on every node (job-generations.ts).
 * May import: ../run/ (runStack), ../record/, ../file/, src/slurm, src/launch, src/util,
 * src/errors.
 */
export { planNodes, agentServices, externalEndpoints, type NodePlan } from './plan.js';
export { runAgent, type AgentOptions } from './agent.js';
export { runMultiNodeStack } from './coordinator.js';
export type { MultiNodeOptions } from './coordinator-options.js';
