import type { ServiceSpec } from './spec.js';

/*
 * Checks of `nodes:` across services. A service with `nodes:` runs on other nodes, in a berth
 * agent that starts only the services of its node; so what it depends on must run on that
 * node too: another `nodes:` service on at least as many nodes. Services without `nodes:`
 * may depend on it freely (they get every node's endpoints).
 */

const reach = (n: 'all' | number): number => (n === 'all' ? Number.POSITIVE_INFINITY : n);
const shown = (n: 'all' | number): string => (n === 'all' ? 'nodes: all' : `nodes: ${n}`);

export function checkNodes(services: readonly ServiceSpec[], add: (line: number, text: string) => void): void {
  const byName = new Map(services.map((s) => [s.name, s]));
  for (const s of services) {
    if (s.nodes === undefined) continue;
    for (const d of s.dependsOn) {
      const target = byName.get(d.service);
      if (!target || target === s) continue; // reported by the cross check
      const label = `service "${s.name}"`;
      if (target.nodes === undefined) {
        add(d.line, `${label}: has ${shown(s.nodes)} but depends on "${d.service}", which runs once where berth up runs; give "${d.service}" nodes: too, or drop the dependency (berth agents start only their node's services)`);
      } else if (reach(target.nodes) < reach(s.nodes)) {
        add(d.line, `${label}: has ${shown(s.nodes)} but depends on "${d.service}" with ${shown(target.nodes)}: on the other nodes it would have nothing to wait for; give "${d.service}" at least as many nodes`);
      }
    }
  }
}
