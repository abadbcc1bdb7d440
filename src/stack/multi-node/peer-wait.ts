import { pollRunDir, readCoordinatorFile, readNodeFile, type NodeEndpoint } from './node-files.js';
import { readInputFile } from '../../util/safe-file.js';
import type { Endpoint } from '../file/endpoint.js';
import { placeholdersOf } from '../file/placeholders.js';
import { assignedOfRecord, type EndpointRecord } from '../record/endpoints.js';
import { placeholderTexts, type ServiceSpec } from '../file/spec.js';
import { templateTagNames } from '../file/templates.js';
import { endpointOnNode, serviceNodes } from './plan.js';

/*
 * Peers across nodes: a `nodes:` service that names itself (an etcd member's --initial-cluster)
 * needs every node's replicas before any starts. Each agent publishes its leased endpoints right
 * after reservation (NodeFile.peers) and waits here until every node of the service has.
 */

/** Whether a service names its own service in a placeholder (command, env, ready) or a template file. */
export function namesItself(s: ServiceSpec): boolean {
  if (placeholderTexts(s).some((t) => placeholdersOf(t).some((p) => p.kind === 'service' && p.service === s.name))) return true;
  return s.templates.some((t) => {
    try {
      return templateTagNames(readInputFile(t.file)).some((tag) => tag.name === s.name || tag.name === 'services');
    } catch {
      return false; // the load-time check reported it
    }
  });
}

/** This node's replicas of each service, as leased (for NodeFile.peers). */
export function leasedPeers(replicas: readonly EndpointRecord[], hostOf: ReadonlyMap<string, string>): Record<string, NodeEndpoint[]> {
  const out: Record<string, NodeEndpoint[]> = {};
  for (const r of replicas) {
    if (r.port === null || !hostOf.has(r.service)) continue;
    (out[r.service] ??= []).push({
      replica: r.replica,
      host: hostOf.get(r.service) ?? r.host ?? '127.0.0.1',
      port: r.port,
      ...(r.ports ? { ports: assignedOfRecord(r.ports) } : {}),
    });
  }
  for (const eps of Object.values(out)) eps.sort((a, b) => a.replica - b.replica);
  return out;
}

/** Calls `found` with each service's replicas on every node (node, then replica order), once every node has published them. */
export async function waitForPeers(
  runDir: string,
  services: readonly ServiceSpec[],
  nodes: readonly string[],
  found: (service: string, endpoints: Endpoint[]) => void,
  stopped: () => boolean,
): Promise<void> {
  const left = new Map(services.map((s) => [s.name, serviceNodes(s.nodes!, nodes)]));
  await pollRunDir(() => {
    const coord = readCoordinatorFile(runDir);
    if (coord) {
      const addresses = new Map(Object.entries(coord.addresses));
      const files = new Map<string, Record<string, NodeEndpoint[]> | undefined>();
      const peersOf = (node: string) => {
        if (!files.has(node)) files.set(node, readNodeFile(runDir, node)?.peers);
        return files.get(node);
      };
      for (const [service, on] of left) {
        const per = on.map((node) => peersOf(node)?.[service]);
        if (per.some((p) => p === undefined)) continue;
        left.delete(service);
        found(
          service,
          per.flatMap((eps, i) => eps!.map((e) => endpointOnNode(e, on[i]!, addresses, i))),
        );
      }
    }
    return left.size === 0;
  }, stopped);
}
