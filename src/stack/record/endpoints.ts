import type { AssignedPorts } from '../../allocate/port-set.js';
import { redactText } from '../../util/redact.js';
import type { AuditFinding, ForeignListener } from '../../launch/launch-api.js';
import { endpointUrl } from '../file/endpoint.js';
import type { ReplicaState } from '../file/spec.js';
import type { SharedPorts } from './result.js';

/* What a run records of its replicas (events.jsonl, endpoints.json), and how one update changes the table (pure). */

/** One line of events.jsonl. Optional fields are left out when unknown. */
export interface StackEvent {
  /** ISO 8601 UTC with milliseconds. */
  t: string;
  service: string;
  replica: number;
  /** A replica on another node of a multi-node stack (Slurm node name); replica numbers are per node. */
  node?: string;
  state: ReplicaState;
  /** The generation of a job's rank (a job of many ranks that restarts as a group), from 0. */
  generation?: number;
  pid?: number;
  port?: number;
  /** Exit status, or the exit code class berth gives a failure (69/70/75). */
  code?: number | null;
  signal?: string;
  /** Ports the replica chose itself, as berth learned them now: name → port. */
  learned?: Record<string, number>;
  detail?: string;
}

/** One entry of endpoints.json. null where not (yet) known. */
export interface EndpointRecord {
  service: string;
  replica: number;
  /** A multi-node stack's replica on another node: its Slurm node (service, node, replica is unique). */
  node?: string;
  host: string | null;
  port: number | null;
  /** SCHEME://HOST:PORT in its service's scheme (default http); null without a port or with `scheme: none`. */
  url: string | null;
  /** Its service's `scheme:` when not http (null: `scheme: none`). */
  scheme?: string | null;
  pid: number | null;
  state: ReplicaState;
  /** A job's rank that restarts as a group: its generation (from 0). */
  generation?: number;
  /** When it entered this state (ISO 8601 UTC). */
  since: string;
  /** Its named ports: a single as its port, a block as {first, last, count}. */
  ports?: Record<string, number | { first: number; last: number; count: number }>;
  /** The names of those ports it chose itself and berth learned (`learn`), when any. */
  learned?: string[];
  /** Listeners of its process tree outside its ports (the listener audit), when any. */
  unexpectedListeners?: AuditFinding[];
  /** Listeners of other processes on its ports (a SO_REUSEPORT member, the other family's loopback), when any. */
  foreign?: ForeignListener[];
}

/** The set back from endpoints.json's `ports` (a node file carries it to other nodes). */
export function assignedOfRecord(rec: NonNullable<EndpointRecord['ports']>): AssignedPorts[] {
  return Object.entries(rec).map(([name, v]) =>
    typeof v === 'number' ? { name, kind: 'single', ports: [v] } : { name, kind: 'block', ports: Array.from({ length: v.count }, (_, i) => v.first + i) },
  );
}

/** A document's shared ports as the stack holds them (a node file carries them to other nodes). */
export function sharedOfDocument(doc: EndpointsDocument): Record<string, SharedPorts> {
  return Object.fromEntries(Object.entries(doc.shared ?? {}).map(([svc, s]) => [svc, { host: s.host, ports: assignedOfRecord(s.ports) }]));
}

/** endpoints.json's `ports` of a replica. */
export function portsRecord(set: readonly AssignedPorts[]): NonNullable<EndpointRecord['ports']> {
  const out: NonNullable<EndpointRecord['ports']> = {};
  for (const a of set) out[a.name] = a.kind === 'single' ? a.ports[0]! : { first: a.ports[0]!, last: a.ports[a.ports.length - 1]!, count: a.ports.length };
  return out;
}

export interface EndpointsDocument {
  /** The stack file as given. */
  stack: string;
  runDir: string;
  /** berth's own pid, so a reader can tell a live stack from a dead one. */
  pid: number;
  updated: string;
  replicas: EndpointRecord[];
  /**
   * The generation the job's ranks are in, when the job restarts as a group (a job of many
   * ranks with restart: on-failure): 0 at first. Its shared ports are this generation's.
   */
  generation?: number;
  /**
   * Ports shared by every replica of a service (`NAME: shared`, a torch MASTER_PORT), with
   * the host they are reached at (replica 0's), by service: {"train": {"host": "10.0.0.1",
   * "ports": {"master": 1025}}} (`ports` as a replica's).
   */
  shared?: Record<string, { host: string; ports: NonNullable<EndpointRecord['ports']> }>;
  /** Writes to the run directory that failed (a full disk), each file once: the record is incomplete. */
  writeFailures?: { path: string; error: string; at: string }[];
  /** Set by berth's watchdog after berth died and it stopped the services (see run-gone.ts). */
  ended?: { at: string; by: 'watchdog'; reason: string };
}

/** What the orchestrator reports; `t` defaults to now, host/pid/port stick once given. */
export interface ReplicaUpdate {
  service: string;
  replica: number;
  node?: string;
  state: ReplicaState;
  /** A job's rank that restarts as a group: the generation this change belongs to (sticks). */
  generation?: number;
  host?: string;
  pid?: number;
  port?: number;
  /** The replica's port set (sticks once given). */
  ports?: readonly AssignedPorts[];
  /** Names of the ports it chose and berth learned (sticks once given; the event carries them with their ports). */
  learned?: string[];
  /** Its service's scheme (sticks once given; default http). */
  scheme?: string | null;
  /** Every listener outside its set found so far (replaces the list). */
  unexpectedListeners?: AuditFinding[];
  /** Every foreign listener found on its ports so far (replaces the list). */
  foreign?: ForeignListener[];
  code?: number | null;
  signal?: string;
  detail?: string;
  t?: Date;
}

/** events.jsonl line (with its newline). Key order is fixed so lines read alike. */
export function formatEvent(e: StackEvent): string {
  const o: Record<string, unknown> = { t: e.t, service: e.service, replica: e.replica, ...(e.node !== undefined ? { node: e.node } : {}), state: e.state };
  for (const k of ['generation', 'pid', 'port', 'code', 'signal', 'learned'] as const) if (e[k] !== undefined) o[k] = e[k];
  // Details quote failure reasons, which may quote a probe's command line or URL.
  if (e.detail !== undefined) o.detail = redactText(e.detail);
  return JSON.stringify(o) + '\n';
}

/** Applies an update to the replica table (pure); returns the event to log. */
export function applyUpdate(table: EndpointRecord[], u: ReplicaUpdate, now: Date = new Date()): StackEvent {
  const t = (u.t ?? now).toISOString();
  let rec = table.find((r) => r.service === u.service && r.replica === u.replica && r.node === u.node);
  if (!rec) {
    rec = {
      service: u.service,
      replica: u.replica,
      ...(u.node !== undefined ? { node: u.node } : {}),
      host: null,
      port: null,
      url: null,
      pid: null,
      state: u.state,
      since: t,
    };
    table.push(rec);
  }
  if (u.host !== undefined) rec.host = u.host;
  if (u.port !== undefined) rec.port = u.port;
  if (u.pid !== undefined) rec.pid = u.pid;
  if (u.ports !== undefined) rec.ports = portsRecord(u.ports);
  if (u.learned !== undefined) rec.learned = [...u.learned];
  if (u.unexpectedListeners !== undefined && u.unexpectedListeners.length > 0) rec.unexpectedListeners = [...u.unexpectedListeners];
  if (u.foreign !== undefined && u.foreign.length > 0) rec.foreign = [...u.foreign];
  if (u.scheme !== undefined && u.scheme !== 'http') rec.scheme = u.scheme;
  rec.url =
    rec.port !== null ? endpointUrl({ host: rec.host ?? '127.0.0.1', port: rec.port, ...(rec.scheme !== undefined ? { scheme: rec.scheme } : {}) }) : null;
  if (u.generation !== undefined) rec.generation = u.generation;
  if (rec.state !== u.state) rec.since = t;
  rec.state = u.state;
  const ev: StackEvent = { t, service: u.service, replica: u.replica, ...(u.node !== undefined ? { node: u.node } : {}), state: u.state };
  if (rec.generation !== undefined) ev.generation = rec.generation;
  if (rec.pid !== null) ev.pid = rec.pid;
  if (rec.port !== null) ev.port = rec.port;
  if (u.code !== undefined) ev.code = u.code;
  if (u.signal !== undefined) ev.signal = u.signal;
  if (u.detail !== undefined) ev.detail = u.detail;
  if (u.learned !== undefined && rec.ports) ev.learned = Object.fromEntries(u.learned.map((n) => [n, rec.ports![n] as number]));
  return ev;
}
