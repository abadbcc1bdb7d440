/*
 * multi-node/: multi-node stacks (`nodes: all | N | others`) inside a Slurm allocation. `berth up` on the
 * first node becomes the coordinator (multi-node/coordinator.ts):
 *   1. it starts one berth agent per node in a single step, `srun --ntasks-per-node=1
 *      --overlap … berth up STACK --agent RUN_DIR` (Slurm launches them: no ssh, no daemon);
 *   2. each agent (multi-node/agent.ts) runs the stack's `nodes:` services of its node with
 *      the ordinary orchestrator, in RUN_DIR/nodes/<node>/, and reports through
 *      RUN_DIR/nodes/<node>.json (replaced atomically): its replicas' states, its endpoints
 *      once ready, how it ended (stopped, failed, or done: its job ranks all exited 0);
 *   3. the first node's other services start at once, here; those that depend on `nodes:`
 *      services wait until every node is ready ({engine.urls} lists every node's replicas at
 *      an address other nodes reach: the node's name, or Slurm's NodeAddr); agents whose
 *      services depend on services here wait for them through RUN_DIR/endpoints.json;
 *   4. RUN_DIR/endpoints.json, events.jsonl and the status view carry every node's replicas
 *      (with `node`); a node that fails (before or after ready), an agent that is gone (srun's
 *      report of its task's end in agents.log, task-ended.ts), or agents that end, stop
 *      everything: berth up exits with that node's exit class (70 for a service that failed,
 *      70 for an agent or step that ended), naming its diagnostics under
 *      RUN_DIR/nodes/<node>/diagnostics/;
 *   5. a `nodes:` job with restart: on-failure restarts as a group on every node
 *      (job-generations.ts): berth up tells the agents to end a generation and, once every
 *      node's is gone, to start the next (agent-control.ts, agent-generations.ts).
 * May import: ../run/ (runStack), ../record/, ../file/, src/slurm, src/launch, src/util,
 * src/errors.
 */
export { planNodes, agentServices, externalEndpoints, type NodePlan } from './plan.js';
export { runAgent, type AgentOptions } from './agent.js';
export { runMultiNodeStack } from './coordinator.js';
export type { MultiNodeOptions } from './coordinator-options.js';
