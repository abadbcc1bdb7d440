import { leaseListened } from '../../allocate/lease-listened.js';
import type { Reservation } from '../../allocate/allocation-types.js';
import { archiveNodeFile, readNodeFile, type NodeFile } from './node-files.js';
import type { ServiceSpec } from '../file/spec.js';

/*
 * A job of ranks on several nodes with restart: on-failure restarts as a group: berth up on the
 * first node decides (job-generations.ts sequences). The rules and the file work live here:
 * which failure may have another generation, and, for a new step of agents (an agent gone),
 * the old generation's shared ports berth up holds itself until the next one has its own (so
 * the two differ; `generations: keep` entries are left alone) and its node files kept.
 */

/** The job whose rank failed, when it may have another generation; undefined: the stack ends. */
export function nextGenerationOf(services: readonly ServiceSpec[], failed: NodeFile['rankFailure'], generation: number): ServiceSpec | undefined {
  const job = failed ? services.find((s) => s.name === failed.service) : undefined;
  if (!job || !job.job || job.restart.policy !== 'on-failure') return undefined;
  return generation < job.restart.limit ? job : undefined;
}

/** The job's fresh (not kept) shared ports that `node` leased in this generation, from the node files. */
export function freshSharedPorts(job: ServiceSpec, files: ReadonlyMap<string, NodeFile>, node: string): number[] {
  const shared = files.get(node)?.shared?.[job.name];
  if (!shared) return [];
  return shared.ports.filter((a) => !job.sharedKept.includes(a.name)).flatMap((a) => a.ports);
}

/** Lease the old ports (their agent is gone, its leases with it); those someone else has now are skipped. */
export async function holdOldPorts(ports: readonly number[], label: string): Promise<Reservation[]> {
  const out: Reservation[] = [];
  for (const p of ports) {
    const got = await leaseListened(p, label);
    if ('reservation' in got) out.push(got.reservation);
  }
  return out;
}

/** The old generation's node files, kept as nodes/<node>.g<N>.json. */
export function archiveGeneration(runDir: string, nodes: readonly string[], generation: number): void {
  for (const n of nodes) archiveNodeFile(runDir, n, generation);
}

/** How berth up tells an agents step which generation of the job it runs. */
export const AGENT_GENERATION_ENV = 'BERTH_AGENT_GENERATION';

/** The generation an agent runs (undefined: a stack without generations across nodes, or 0). */
export function agentGeneration(env: NodeJS.ProcessEnv): number | undefined {
  const v = env[AGENT_GENERATION_ENV];
  return v !== undefined && /^\d{1,6}$/.test(v) ? Number(v) : undefined;
}

/** The node files there are now, deciding nothing. */
export function readNodeFiles(runDir: string, nodes: readonly string[]): Map<string, NodeFile> {
  const files = new Map<string, NodeFile>();
  for (const node of nodes) {
    const f = readNodeFile(runDir, node);
    if (f) files.set(node, f);
  }
  return files;
}
