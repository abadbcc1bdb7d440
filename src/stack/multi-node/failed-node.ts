import type { AgentsStep } from './agents-step.js';
import { firstFailure, type NodeFailure } from './node-failure.js';
import type { NodeFile } from './node-files.js';

/*
 * Which node failed, as the first node sees it: from the node files, else from srun's report
 * of the agents' step (an agent gone, the step ended). Reads the step's log as it grew.
 */

export interface NodeWatch {
  generation: number;
  step: AgentsStep | undefined;
  agentNodes: readonly string[];
  /** berth asked the agents to stop: their end is not a failure. */
  stopAsked: boolean;
  /** Every job node is done: the step's end is the job's. */
  allDone: boolean;
}

export function failedNode(files: ReadonlyMap<string, NodeFile>, w: NodeWatch): NodeFailure | undefined {
  const failed = firstFailure(files, w.generation);
  if (failed) return { node: failed.node, file: failed, why: failed.failure?.reason ?? `its agent exited with status ${failed.exitCode}` };
  const step = w.step;
  if (!step || w.stopAsked) return undefined;
  // An agent is gone (kill -9, a crash, its node lost) though its node file still says
  // starting or ready: srun's report is its end (task-ended.ts). A done node runs nothing.
  step.scan();
  const gone = w.agentNodes.find((n) => step.ended.has(n) && files.get(n)?.state !== 'done');
  if (gone) return { node: gone, file: files.get(gone), why: `its agent ended unasked (srun: ${step.ended.get(gone)}); see ${step.log}`, gone: true };
  if (step.running || w.allDone) return undefined;
  const silent = w.agentNodes.find((n) => !['ready', 'done'].includes(files.get(n)?.state ?? '')) ?? w.agentNodes[0]!;
  return { node: silent, file: files.get(silent), why: step.startError ?? `the agents' step (srun) ended with status ${step.code} (see ${step.log})` };
}
