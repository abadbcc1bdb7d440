import { join } from 'node:path';
import { EXIT } from '../../errors.js';
import type { AgentsStep } from './agents-step.js';
import { nodeRunDir, type NodeFile } from './node-files.js';
import type { StackFailure, StackResult } from '../run/orchestrate.js';
import { serviceNodes, type NodePlan } from './plan.js';

/*
 * Which node failed, as the first node sees it (from the node files, else from srun's report of
 * the agents' step), and how the stack ends then: the first failing rank of all nodes, or the
 * node whose agent failed or went away, as the stack's failure.
 */

/** A node that failed: its last node file and why. `gone`: its agent ended unasked (srun said so). */
export interface NodeFailure {
  node: string;
  file: NodeFile | undefined;
  why: string;
  gone?: boolean;
}

/**
 * The node that failed first: the earliest failing job rank, else the node file that said
 * failed first. A rank failure of an earlier generation than `generation` is over (its
 * generation was restarted), not a failure any more.
 */
export function firstFailure(files: ReadonlyMap<string, NodeFile>, generation = 0): NodeFile | undefined {
  const now = [...files.values()].map((f) => (f.rankFailure && (f.rankFailure.generation ?? 0) < generation ? withoutRankFailure(f) : f));
  const at = (f: NodeFile) => f.rankFailure?.t ?? f.updated;
  return now.filter((f) => f.rankFailure || f.state === 'failed').sort((a, b) => at(a).localeCompare(at(b)))[0];
}

function withoutRankFailure(f: NodeFile): NodeFile {
  const { rankFailure: _, ...rest } = f;
  return rest;
}

export function failedResult(runDir: string, failure: StackFailure): StackResult {
  return { exitCode: failure.exitCode, reason: 'failed', failure, runDir };
}

export function nodeFailureResult(plan: NodePlan, runDir: string, nf: NodeFailure): StackResult {
  const f = nf.file?.failure;
  const rf = nf.file?.rankFailure;
  if (rf) {
    // A job's rank: its status is the stack's, named with its global rank and its node.
    const spec = plan.nodeServices.find((s) => s.name === rf.service);
    const world = spec && typeof spec.replicas === 'number' ? spec.replicas * serviceNodes(spec.nodes!, plan.nodes).length : undefined;
    const logs = join(nodeRunDir(runDir, nf.node), 'logs', `${rf.service}-${rf.replica}`);
    const same = f && f.service === rf.service && f.replica === rf.replica;
    return failedResult(runDir, {
      service: rf.service,
      replica: rf.replica,
      exitCode: rf.status,
      reason: `on node ${nf.node}: rank ${rf.rank}${world !== undefined ? ` of ${world}` : ''} exited with status ${rf.status}; every other rank, on ` +
        `every node, was stopped`,
      logs: { out: `${logs}.out`, err: `${logs}.err` },
      ...(same && f.diagnostics ? { diagnostics: f.diagnostics } : {}),
    });
  }
  return failedResult(runDir, {
    service: f?.service ?? '(agent)',
    replica: f?.replica ?? 0,
    // A failed node is never a success: an agent that stopped on srun's end says 0.
    exitCode: f?.exitCode || nf.file?.exitCode || EXIT.SOFTWARE,
    reason: `on node ${nf.node}: ${nf.why}`,
    logs: f?.logs ?? { out: join(runDir, 'agents.log'), err: join(runDir, 'agents.log') },
    ...(f?.diagnostics ? { diagnostics: f.diagnostics } : {}),
  });
}

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
