import type { PortEntry } from '../../allocate/port-set.js';
import type { PortRange } from '../../host/host-map.js';
import type { Handoff, ReadySpec, StrayRule } from '../../launch/launch-api.js';
import type { Band, Layout } from '../../layout/layout-model.js';

/** What a dependent waits for: spawned, ready (ownership + probe), or exited with status 0. */
export type DependCondition = 'started' | 'ready' | 'completed';

export interface Dependency {
  service: string;
  condition: DependCondition;
  /** 1-based line of the entry in the stack file. */
  line: number;
}

/** A number, or "gpus": one replica per GPU of the Slurm step, resolved by the Slurm layer (refused until then). */
export type ReplicaCount = number | 'gpus';

/** Where a service's ports come from. Replica r of a windowed band takes window (instance + r). */
export type ServicePorts =
  /** No port: a job that asked for none, or `port: none`. `{port}` is then an error. */
  | { kind: 'none' }
  /** The built-in default band, computed from the host at start (no layout, or a layout without a "default" band). */
  | { kind: 'default' }
  /** A band of the stack's layout. */
  | { kind: 'band'; band: Band; instance: number }
  | { kind: 'port'; port: number }
  /** Every replica takes a port from this range (leases keep them distinct). */
  | { kind: 'range'; range: PortRange };

export type RestartPolicy = 'no' | 'on-failure';

/** `templates: { NAME: FILE }`: a config file rendered into the run folder before each start. */
export interface ConfigTemplate {
  name: string;
  /** Absolute path of the template file. */
  file: string;
  /** 1-based line of the file in the stack file. */
  line: number;
}

export interface ServiceSpec {
  name: string;
  /** 1-based line of the service's key in the stack file. */
  line: number;
  /** Argv templates (placeholders unresolved). Never run through a shell. */
  command: string[];
  replicas: ReplicaCount;
  /** `nodes:` (Slurm): every node of the allocation, its first N, or all but the first, each by a berth agent; undefined: where `berth up` runs. */
  nodes?: 'all' | 'others' | number;
  /** Where every port of the service comes from (band, port, range, default, or none). */
  source: ServicePorts;
  /**
   * Each replica's port set in `ports:` order, the first the primary port ({port}, readiness, URLs);
   * without `ports:` IMPLICIT_SET (one port named "port"); empty for source none.
   */
  ports: PortEntry[];
  /** The stack file has `ports:` for this service (BERTH_PORT_<NAME> and {ports.NAME} are its names). */
  portsDeclared: boolean;
  /**
   * Its shared entries (`NAME: shared`, `{ block: N, shared: true }`): one port or block for every
   * replica, leased on replica 0's host and held until right before replica 0 binds it (like
   * torch.distributed's MASTER_PORT). Not in `ports`, each replica's own set.
   */
  shared: PortEntry[];
  /** Shared entries kept across a job's generations (`generations: keep`); the others are leased afresh each time. */
  sharedKept: string[];
  /** Where it listens and is reached (default 127.0.0.1); URLs of a wildcard host use loopback of its family. */
  host: string;
  /** Extra environment, values are templates. */
  env: Record<string, string>;
  /** Config files rendered per replica before each start ({templates.NAME} is the rendered path). */
  templates: ConfigTemplate[];
  /** Absolute working directory (`cwd:` resolved against the stack file's folder; default that folder). */
  cwd: string;
  handoff: Handoff;
  /** Readiness probe; the URL / command are templates (`{port}` …). None: ownership alone is readiness. */
  ready?: ReadySpec;
  readyTimeoutMs?: number;
  dependsOn: Dependency[];
  /** `restart: no | on-failure` with `restart_limit: N` (restarts after the first start; default 3). */
  restart: { policy: RestartPolicy; limit: number };
  /** TERM → KILL grace when stopping (default 10s). */
  stopGraceMs: number;
  /** The stack ends when this service exits, with its status; its output passes through. */
  job: boolean;
  /** file: output only in logs/<service>-<replica>.{out,err}; attach: also streamed, prefixed. */
  logs: 'attach' | 'file';
  /** Listeners outside its ports it cannot help opening (`strays:`): recorded, not warned about. */
  strays: StrayRule[];
  /** `strict:` (its own, else the stack's): a foreign listener on its ports after ready fails the replica (70) instead of a warning. */
  strict?: boolean;
  /** `scheme:` of its URLs ({svc.url}, templates, endpoints.json): default "http"; null for `scheme: none` (only HOST:PORT). */
  scheme: string | null;
  /** A one-shot step (one-shot.ts): its exit 0 is its completion, even before it was ready. */
  oneShot: boolean;
  /** `dir_owner: USER[:GROUP]`: its replica directories ({dir}) are given to this user (berth as root). */
  dirOwner?: string;
  /** 1-based line of `dir_owner:` (an unknown user is reported there). */
  dirOwnerLine?: number;
}

/** A service's texts that may hold placeholders: command words, env values, the ready probe's URL or command. */
export function placeholderTexts(s: ServiceSpec): string[] {
  return [...s.command, ...Object.values(s.env), ...(s.ready?.kind === 'cmd' ? [s.ready.command] : s.ready?.kind === 'http' ? [s.ready.url] : [])];
}

export interface StackSpec {
  /** The stack file as given (messages use it). */
  file: string;
  /** Absolute folder of the stack file: relative paths in it are resolved against this. */
  dir: string;
  /** `layout: FILE` or inline `bands:`; undefined: the built-in default layout of the host. */
  layout?: Layout;
  /** In file order. */
  services: ServiceSpec[];
  /** Top-level `strict:`, the default of every service's `strict:`. */
  strict?: boolean;
}

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_STOP_GRACE_MS = 10_000;
export const DEFAULT_RESTART_LIMIT = 3;

/** A replica's life, as written to events.jsonl and endpoints.json. */
export type ReplicaState = 'pending' | 'starting' | 'owned' | 'ready' | 'stopping' | 'exited' | 'failed';

export const REPLICA_STATES: readonly ReplicaState[] = ['pending', 'starting', 'owned', 'ready', 'stopping', 'exited', 'failed'];
