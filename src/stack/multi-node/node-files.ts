import { readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { AssignedPorts } from '../../allocate/port-set.js';
import { writeFileAtomic } from '../../util/atomic-write.js';
import type { ReplicaState } from '../file/spec.js';
import type { SharedPorts } from '../record/result.js';

/*
 * The agents talk to `berth up` only through the run directory, on a filesystem every node sees:
 *   nodes/<node>/        the agent's own run directory
 *   nodes/<node>.json    its node file, replaced atomically on each change
 *   coordinator.json     berth up's node and the addresses other nodes reach it and each other at
 */

/** done: every rank of its job exited 0 and nothing else of it runs (the stack ends once every node is done). */
export type NodeState = 'starting' | 'ready' | 'done' | 'stopped' | 'failed';

export interface NodeEndpoint {
  replica: number;
  /** The address the service listens on (0.0.0.0 / :: for every address). */
  host: string;
  port: number;
  /** Its named ports (a stack's `ports:`), for `{svc.port.NAME}` on other nodes. */
  ports?: AssignedPorts[];
}

/** One replica of a node as the agent's endpoints.json has it (host: where it listens). */
export interface NodeReplica {
  service: string;
  replica: number;
  state: ReplicaState;
  host: string | null;
  port: number | null;
  pid: number | null;
  ports?: AssignedPorts[];
  /** Exit status once exited or failed. */
  code?: number | null;
  /** A rank of a job restarted as a group: its generation. */
  generation?: number;
}

/** The node file an agent keeps in the run directory. */
export interface NodeFile {
  node: string;
  /** The agent's pid on its node (for humans: it is another host's pid). */
  pid: number;
  state: NodeState;
  updated: string;
  /** The generation of a job restarted as a group across nodes this agent runs (absent: 0). */
  generation?: number;
  /** Once ready: each service's replicas on this node. */
  services: Record<string, NodeEndpoint[]>;
  /** Every replica of the node with its state, kept current while the agent runs. */
  replicas?: NodeReplica[];
  /** Its replicas' leased endpoints (host as bound), before any starts: a service that names itself waits for every node's (peer-wait.ts). */
  peers?: Record<string, NodeEndpoint[]>;
  /** Shared ports (`NAME: shared`) this node leased for services whose rank 0 runs here, once leased. */
  shared?: Record<string, SharedPorts>;
  /**
   * The first rank of a job that failed here (exited non-zero or killed, not stopped by berth):
   * written at once, before the node's teardown, so berth up can stop every node and name the
   * first failing rank of all nodes (earliest `t`).
   */
  rankFailure?: { service: string; replica: number; rank: number; status: number; t: string; generation?: number };
  /**
   * A job restarted as a group: the last generation proven gone here (no process of any rank's tree, nothing on its ports).
   * The node then waits for berth up's `start`; the next one's shared ports (leased here when rank 0 is) are in `shared`.
   */
  gone?: number;
  /** When it ended: the agent's exit status. */
  exitCode?: number;
  /** When it failed: what, where its diagnostics are (absolute paths on the shared filesystem). */
  failure?: { service: string; replica: number; exitCode: number; reason: string; diagnostics?: string; logs?: { out: string; err: string } };
}

/** Node names become file names: keep them one safe path component. */
export function nodeKey(node: string): string {
  const safe = node.replace(/[^A-Za-z0-9._-]/g, '_');
  return safe === '' || safe === '.' || safe === '..' ? `node_${safe}` : safe;
}

export const nodesDir = (runDir: string): string => join(runDir, 'nodes');
export const nodeRunDir = (runDir: string, node: string): string => join(nodesDir(runDir), nodeKey(node));
export const nodeFilePath = (runDir: string, node: string): string => join(nodesDir(runDir), `${nodeKey(node)}.json`);

export const coordinatorFilePath = (runDir: string): string => join(runDir, 'coordinator.json');

/** Where berth up (the coordinator) runs. */
export interface CoordinatorFile {
  node: string;
  /** The address other nodes reach the first node's services at (their loopback and wildcard hosts). */
  address: string;
  /** Every agent node's address as other nodes reach it (a node's name, or Slurm's NodeAddr). */
  addresses: Record<string, string>;
  pid: number;
}

export function writeCoordinatorFile(runDir: string, f: CoordinatorFile): void {
  writeFileAtomic(coordinatorFilePath(runDir), JSON.stringify(f, null, 2) + '\n', 0o600);
}

/** A JSON file of the run directory, or undefined while it does not exist (yet), cannot be parsed or is not what `ok` wants. */
function readJson<T>(path: string, ok: (v: T) => boolean): T | undefined {
  try {
    const v = JSON.parse(readFileSync(path, 'utf8')) as T;
    return v && ok(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

export function readCoordinatorFile(runDir: string): CoordinatorFile | undefined {
  return readJson<CoordinatorFile>(coordinatorFilePath(runDir), (v) => typeof v.address === 'string');
}

export function writeNodeFile(runDir: string, f: NodeFile): void {
  writeFileAtomic(nodeFilePath(runDir, f.node), JSON.stringify(f, null, 2) + '\n', 0o600);
}

/** A job's generation is over on this node: its node file as it ended, kept as nodes/<node>.g<N>.json. */
export function keepNodeFile(runDir: string, f: NodeFile, generation: number): void {
  writeFileAtomic(nodeFilePath(runDir, f.node).replace(/\.json$/, `.g${generation}.json`), JSON.stringify(f, null, 2) + '\n', 0o600);
}

/** A generation over on every node (its agents gone): its node file kept as keepNodeFile's, so nothing reads its ports as the next's. */
export function archiveNodeFile(runDir: string, node: string, generation: number): void {
  const path = nodeFilePath(runDir, node);
  try {
    renameSync(path, path.replace(/\.json$/, `.g${generation}.json`));
  } catch {
    // no node file (the agent never wrote one): nothing to keep
  }
}

export function readNodeFile(runDir: string, node: string): NodeFile | undefined {
  return readJson<NodeFile>(nodeFilePath(runDir, node), (v) => typeof v === 'object' && typeof v.state === 'string');
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

/** Reads the run directory every 100 ms until `step` has all it waits for (true), or `stopped` (false). */
export async function pollRunDir(step: () => boolean, stopped: () => boolean): Promise<boolean> {
  while (!stopped()) {
    if (step()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

/** How berth up tells an agents step which generation of the job it runs. */
export const AGENT_GENERATION_ENV = 'BERTH_AGENT_GENERATION';

/** The generation an agent runs (undefined: a stack without generations across nodes, or 0). */
export function agentGeneration(env: NodeJS.ProcessEnv): number | undefined {
  const v = env[AGENT_GENERATION_ENV];
  return v !== undefined && /^\d{1,6}$/.test(v) ? Number(v) : undefined;
}
