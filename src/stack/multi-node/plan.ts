import { BerthError, EXIT } from '../../errors.js';
import type { NodeFile, NodeReplica } from './node-files.js';
import { readSlurmEnv, type SlurmEnv } from '../../slurm/env.js';
import { compressHostlist } from '../../slurm/hostlist.js';
import type { GraphNode } from '../file/graph.js';
import type { Endpoint } from '../file/endpoint.js';
import type { ServiceSpec, StackSpec } from '../file/spec.js';

/* Which node runs what in a multi-node stack, and where other nodes reach it. Pure. */

export interface NodePlan {
  /** The allocation's nodes, in Slurm's order. */
  nodes: string[];
  /** Nodes that run an agent: those with at least one `nodes:` service, in allocation order. */
  agentNodes: string[];
  /** Services with `nodes:` (run by the agents). */
  nodeServices: ServiceSpec[];
  /** The other services (run here, on the first node, from the start). */
  local: StackSpec;
}

type Nodes = NonNullable<ServiceSpec['nodes']>;

/** Whether node `index` (0 = the allocation's first) of `total` runs a service with `nodes: n`. */
export function onNode(n: Nodes, index: number, total: number): boolean {
  if (n === 'all') return index < total;
  if (n === 'others') return index >= 1 && index < total;
  return index < n;
}

/** The allocation's nodes a service with `nodes: n` runs on, in order. */
export function serviceNodes(n: Nodes, nodes: readonly string[]): string[] {
  return nodes.filter((_, i) => onNode(n, i, nodes.length));
}

/**
 * How a stack with `nodes:` services runs here; undefined when it runs on this host alone (no
 * `nodes:`, or one node or none). Throws BerthError(65) for `nodes: N` beyond the allocation
 * and for `nodes: others` without another node.
 */
export function planNodes(spec: StackSpec, env: NodeJS.ProcessEnv = process.env): NodePlan | undefined {
  const nodeServices = spec.services.filter((s) => s.nodes !== undefined);
  if (nodeServices.length === 0) return undefined;
  // Read only now: a stack without nodes: must not fail over an odd Slurm variable.
  const slurm: SlurmEnv | undefined = readSlurmEnv(env);
  const nodes = slurm && slurm.nodeList.length > 0 ? slurm.nodeList : [];
  const total = Math.max(1, nodes.length);
  const where = () =>
    slurm
      ? `job ${slurm.jobId} has ${total} node${total === 1 ? '' : 's'}${nodes.length > 0 ? ` (${compressHostlist(nodes)})` : ''}`
      : 'berth up is not inside a Slurm job (one host)';
  for (const s of nodeServices) {
    if (typeof s.nodes === 'number' && s.nodes > total) {
      throw new BerthError(
        EXIT.DATAERR,
        `${spec.file}:${s.line}: service "${s.name}": nodes: ${s.nodes}, but ${where()}; ask Slurm for more nodes (sbatch --nodes=${s.nodes}) or lower nodes:`,
        { service: s.name },
      );
    }
    if (s.nodes === 'others' && total < 2) {
      throw new BerthError(
        EXIT.DATAERR,
        `${spec.file}:${s.line}: service "${s.name}": nodes: others runs on every node but the first, but ${where()}; ask Slurm for at least 2 nodes ` +
          `(sbatch --nodes=2), or use nodes: all`,
        { service: s.name },
      );
    }
  }
  if (total === 1) return undefined;
  const agentNodes = nodes.filter((_, i) => nodeServices.some((s) => onNode(s.nodes!, i, total)));
  return { nodes, agentNodes, nodeServices, local: localStack(spec, nodeServices) };
}

/** Whether service `from` depends on `to`, directly or through others. */
function dependsOn(byName: ReadonlyMap<string, ServiceSpec>, from: string, to: string, seen = new Set<string>()): boolean {
  if (seen.has(from)) return false;
  seen.add(from);
  return (byName.get(from)?.dependsOn ?? []).some((d) => d.service === to || dependsOn(byName, d.service, to, seen));
}

/**
 * The first node's services. The agents stop all of a node's services at once, so one here that
 * depends on a `nodes:` service is given a `started` dependency on every other (all become known
 * at once: no delay), except those that depend on it (a cycle): it stops before all of them.
 */
function localStack(spec: StackSpec, nodeServices: readonly ServiceSpec[]): StackSpec {
  const byName = new Map(spec.services.map((s) => [s.name, s]));
  const services = spec.services
    .filter((s) => s.nodes === undefined)
    .map((s) => {
      if (!s.dependsOn.some((d) => byName.get(d.service)?.nodes !== undefined)) return s;
      const extra = nodeServices
        .filter((n) => !s.dependsOn.some((d) => d.service === n.name) && !dependsOn(byName, n.name, s.name))
        .map((n) => ({ service: n.name, condition: 'started' as const, line: s.line }));
      return extra.length === 0 ? s : { ...s, dependsOn: [...s.dependsOn, ...extra] };
    });
  return { ...spec, services };
}

/** The services an agent on node `index` of `total` runs. */
export function agentServices(spec: StackSpec, index: number, total: number): ServiceSpec[] {
  return spec.services.filter((s) => s.nodes !== undefined && onNode(s.nodes, index, total));
}

/** Services as graph nodes (for an orchestrator's externalServices). */
export const graphNodes = (services: readonly ServiceSpec[]): GraphNode[] => services.map((s) => ({ name: s.name, dependsOn: s.dependsOn }));

const WILDCARD = new Set(['0.0.0.0', '::', '[::]', '']);
const isLoopback = (h: string): boolean => h === 'localhost' || h.startsWith('127.') || h === '::1' || h === '[::1]';

/**
 * Where other nodes reach a listener of `node`: a wildcard or loopback host at the node's
 * address (a loopback listener is reachable only there, if at all), a specific one as it is.
 */
export function reachAt(host: string | null | undefined, node: string, addresses: ReadonlyMap<string, string>): string {
  return host === null || host === undefined || WILDCARD.has(host) || isLoopback(host) ? (addresses.get(node) ?? node) : host;
}

/** A node replica's endpoint as other nodes reach it. */
export const endpointOnNode = (
  e: Pick<NodeReplica, 'host' | 'port' | 'ports'>,
  node: string,
  addresses: ReadonlyMap<string, string>,
  nodeRank?: number,
): Endpoint => ({
  host: reachAt(e.host, node, addresses),
  port: e.port!,
  ...(e.ports ? { ports: e.ports } : {}),
  node,
  ...(nodeRank !== undefined ? { nodeRank } : {}),
});

/** Every node's replicas of each service (with a port), in node order, at addresses other nodes reach. */
export function externalEndpoints(plan: NodePlan, files: ReadonlyMap<string, NodeFile>, addresses: ReadonlyMap<string, string>): Map<string, Endpoint[]> {
  const out = new Map<string, Endpoint[]>();
  // A node's index among the nodes that run the service (a template's {{node_rank}} of a replica).
  const nodesOf = new Map<string, number>();
  for (const s of plan.nodeServices) out.set(s.name, []);
  for (const node of plan.agentNodes) {
    const f = files.get(node);
    if (!f) continue;
    for (const [name, eps] of Object.entries(f.services)) {
      const list = out.get(name);
      if (!list || eps.length === 0) continue;
      const nodeRank = nodesOf.get(name) ?? 0;
      nodesOf.set(name, nodeRank + 1);
      for (const e of eps) list.push(endpointOnNode(e, node, addresses, nodeRank));
    }
  }
  return out;
}
