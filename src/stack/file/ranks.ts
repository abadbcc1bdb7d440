import { hostname } from 'node:os';
import type { RankField } from './placeholders.js';
import type { ServiceSpec } from './spec.js';

/*
 * Where each replica stands in its service's ranks, torch.distributed style: a service of R
 * replicas on N nodes has world size N×R; the replica r on the service's node k is rank
 * k×R + r, local rank r, node rank k. A service without `nodes:` runs on one node (where
 * berth up runs): rank = replica. Pure: the topology says which node this is.
 */

/** This host's place in the allocation (a berth agent's node, or the one host). */
export interface Topology {
  /** Slurm's node name; the host name outside Slurm. */
  node: string;
  nodeIndex: number;
  /** Every node of the allocation, in Slurm's order. */
  nodes: readonly string[];
}

export interface Rank {
  rank: number;
  worldSize: number;
  localRank: number;
  nodeRank: number;
  nodeCount: number;
  node: string;
  /** Which start of a job's ranks this is, one more each group restart (run/generation.ts); else 0. */
  generation: number;
}

/** One host: berth up outside a multi-node stack. */
export function localTopology(env: NodeJS.ProcessEnv = process.env): Topology {
  const node = env.SLURMD_NODENAME || hostname();
  return { node, nodeIndex: 0, nodes: [node] };
}

/** The nodes a service runs on, as the first index and how many (at least this one). */
export function serviceNodes(spec: Pick<ServiceSpec, 'nodes'>, t: Topology): { first: number; count: number } {
  const total = t.nodes.length;
  const n = spec.nodes;
  if (n === undefined) return { first: t.nodeIndex, count: 1 };
  if (n === 'others') return { first: 1, count: Math.max(1, total - 1) };
  return { first: 0, count: Math.max(1, n === 'all' ? total : Math.min(Number(n), total)) };
}

export function rankOf(spec: Pick<ServiceSpec, 'nodes'>, replica: number, replicasHere: number, t: Topology): Rank {
  const { first, count } = serviceNodes(spec, t);
  const nodeRank = Math.max(0, t.nodeIndex - first);
  return {
    rank: nodeRank * replicasHere + replica,
    worldSize: count * replicasHere,
    localRank: replica,
    nodeRank,
    nodeCount: count,
    node: t.node,
    generation: 0,
  };
}

/** BERTH_RANK … BERTH_NODE: set for every replica (docs/stack.md maps them to torch's and Slurm's). */
export function rankEnv(r: Rank): Record<string, string> {
  return {
    BERTH_RANK: String(r.rank),
    BERTH_WORLD_SIZE: String(r.worldSize),
    BERTH_LOCAL_RANK: String(r.localRank),
    BERTH_NODE_RANK: String(r.nodeRank),
    BERTH_NODE_COUNT: String(r.nodeCount),
    BERTH_NODE: r.node,
    BERTH_GENERATION: String(r.generation),
  };
}

/** {rank} … {generation} and their template fields, by the names they are written with. */
export function rankFields(r: Rank): Record<RankField, number | string> {
  const { rank, worldSize, localRank, nodeRank, nodeCount, node, generation } = r;
  return { rank, world_size: worldSize, local_rank: localRank, node_rank: nodeRank, node_count: nodeCount, node, generation };
}
