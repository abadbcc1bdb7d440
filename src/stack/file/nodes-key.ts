import { toUint } from '../../util/yaml-values.js';
import type { ServiceSpec } from './spec.js';

/*
 * `nodes:` (Slurm): all, others (every node but the first) or the first N nodes of the
 * allocation; and its checks across services. A service with `nodes:` runs on other nodes, in a berth
 * agent that starts only the services of its node; so a `nodes:` service it depends on must
 * run on each of its nodes too. A service without `nodes:` (once, on the first node) may be
 * depended on by anything: the agents wait for it through the run directory, and it reaches
 * them at the first node's address. Cycles, across nodes or not, are the graph check's.
 */

type Nodes = NonNullable<ServiceSpec['nodes']>;

/** The value of `nodes:`; undefined when it is none of all, others, N ≥ 1. */
export function readNodesKey(text: string | undefined): Nodes | undefined {
  const t = text?.trim();
  if (t === 'all' || t === 'others') return t;
  const n = t === undefined ? undefined : toUint(t);
  return n === undefined || n < 1 ? undefined : n;
}

/** Whether every node of `inner` is a node of `outer`, whatever the allocation's size. */
function covers(outer: Nodes, inner: Nodes): boolean {
  if (outer === 'all') return true;
  if (outer === 'others') return inner === 'others';
  return typeof inner === 'number' && inner <= outer;
}

export function checkNodes(services: readonly ServiceSpec[], add: (line: number, text: string) => void): void {
  const byName = new Map(services.map((s) => [s.name, s]));
  for (const s of services) {
    if (s.nodes === undefined) continue;
    for (const d of s.dependsOn) {
      const target = byName.get(d.service);
      if (!target || target === s || target.nodes === undefined) continue; // unknown and self: the stack checks'
      if (covers(target.nodes, s.nodes)) continue;
      const where = target.nodes === 'others' ? 'the first node has none of it' : 'some of its nodes would have nothing to wait for';
      add(
        d.line,
        `service "${s.name}": has nodes: ${s.nodes} but depends on "${d.service}" with nodes: ${target.nodes}: ${where}; give "${d.service}" nodes: all (or ` +
          `at least the same nodes)`,
      );
    }
  }
}
