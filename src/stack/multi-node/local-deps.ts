import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pollRunDir, readCoordinatorFile } from './node-files.js';
import { conditionStatus, type ReplicaStatus } from '../file/graph.js';
import type { StackHandle } from '../run/orchestrate.js';
import type { Endpoint } from '../file/endpoint.js';
import { assignedOfRecord } from '../record/endpoints.js';
import type { DependCondition, ServiceSpec } from '../file/spec.js';
import { reachAt } from './plan.js';

/*
 * An agent's dependencies on services of the first node (a Ray head): known once berth up's
 * endpoints.json shows them meeting the condition asked, at the first node's address.
 */

/** The strongest condition this node's services ask of `dep` (completed > ready > started). */
function neededCondition(services: readonly ServiceSpec[], dep: string): DependCondition {
  const conds = services.flatMap((s) => s.dependsOn.filter((d) => d.service === dep).map((d) => d.condition));
  return conds.includes('completed') ? 'completed' : conds.includes('ready') ? 'ready' : 'started';
}

interface CoordinatorRecord {
  service: string;
  node?: string;
  state: ReplicaStatus['state'];
  host: string | null;
  port: number | null;
  ports?: Parameters<typeof assignedOfRecord>[0];
}

/** Services of the first node as berth up's endpoints.json has them now (none while it is unreadable). */
function coordinatorRecords(runDir: string): CoordinatorRecord[] {
  try {
    const doc = JSON.parse(readFileSync(join(runDir, 'endpoints.json'), 'utf8')) as { replicas?: CoordinatorRecord[] };
    return (doc.replicas ?? []).filter((r) => r.node === undefined);
  } catch {
    return [];
  }
}

/** Polls berth up's endpoints.json until each of `local` meets what this node's services ask of it. */
export async function waitForLocal(
  runDir: string,
  services: readonly ServiceSpec[],
  local: readonly ServiceSpec[],
  h: StackHandle,
  ended: () => boolean,
): Promise<void> {
  const left = new Map(local.map((s) => [s.name, neededCondition(services, s.name)]));
  let address: string | undefined;
  await pollRunDir(() => {
    address ??= readCoordinatorFile(runDir)?.address;
    const recs = address === undefined ? [] : coordinatorRecords(runDir);
    for (const [name, cond] of [...left]) {
      const mine = recs.filter((r) => r.service === name);
      // This node's stack does not have the service: its URLs' scheme comes with its endpoints.
      const scheme = local.find((s) => s.name === name)!.scheme;
      const statuses: ReplicaStatus[] = mine.map((r) => ({ state: r.state, ...(r.state === 'exited' ? { code: 0 } : {}) }));
      if (mine.length === 0 || conditionStatus(cond, statuses) !== 'met') continue;
      const eps: Endpoint[] = mine
        .filter((r) => r.port !== null)
        .map((r) => ({
          host: reachAt(r.host, '', new Map([['', address!]])),
          port: r.port!,
          scheme,
          ...(r.ports ? { ports: assignedOfRecord(r.ports) } : {}),
        }));
      left.delete(name);
      h.setExternal(name, eps, statuses);
    }
    return left.size === 0;
  }, ended);
}
