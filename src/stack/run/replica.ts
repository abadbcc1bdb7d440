import type { AssignedPorts } from '../../allocate/port-set.js';
import type { NamedReservation } from '../../allocate/reserve-named.js';
import type { PortSource } from '../../allocate/allocation-types.js';
import type { AuditFinding, ForeignListener, LaunchHandle } from '../../launch/launch-api.js';
import type { GpuReplica } from '../../slurm/replicas.js';
import { OutputFanout } from '../record/replica-output.js';
import type { ReplicaState, ServiceSpec } from '../file/spec.js';
import type { StackConsole } from '../record/stack-console.js';

/* A stack's services and replicas as the orchestrator tracks them while they run. */

export interface Replica {
  svc: Service;
  index: number;
  /** Its GPU under `replicas: gpus`: window, {gpu} and CUDA_VISIBLE_DEVICES. */
  gpu?: GpuReplica;
  /** "engine/1" */
  label: string;
  source: PortSource | undefined;
  /** The primary port (the set's first entry). */
  port: number | undefined;
  /** Its port set, leased until the teardown: launch() hands the singles over (keepReservation), a restart re-holds them. */
  set: NamedReservation | undefined;
  /** Ports it chose itself, as its current attempt's launch learned them (`learn` entries); empty until then. */
  learned: AssignedPorts[];
  /** Stopped to be started again on a dependency's moved learned port (next.ts): why. */
  refresh: string | undefined;
  /** The learned ports of its last ready attempt (a restart may come back on others: next.ts tells the dependents). */
  lastLearned: AssignedPorts[] | undefined;
  /** Listeners of its process tree outside its set (launch's audit), each port once. */
  unexpected: AuditFinding[];
  /** Listeners of other processes on its ports (launch's foreign check), each socket once. */
  foreign: ForeignListener[];
  /** The address the replica was reached on once ready (else its spec host). */
  host: string;
  state: ReplicaState;
  code: number | null | undefined;
  attempt: number;
  restarts: number;
  runner: LaunchHandle | undefined;
  /** The current attempt failed (its 'failed' event came): its exit is part of that. */
  attemptFailed: boolean;
  stopAsked: boolean;
  /** Stopped because its generation ended (generation.ts): its exit is part of that, no cause. */
  generationStop: boolean;
  everReady: boolean;
  /** No further attempt will follow: the runner's exit is this replica's end. */
  final: boolean;
  /** Settles when the replica's last runner has exited and its logs are closed. */
  ended: Promise<void>;
  markEnded: () => void;
  /** Output beyond the log (job passthrough, --follow); the logs are written by launch(). */
  out: OutputFanout;
  err: OutputFanout;
  /** Replica 0 of a service with shared ports: their holds were closed for it to bind them. */
  sharedReleased?: boolean;
  /** Diagnostics folders of attempts, kept when a bundle was written. */
  diag: { dir: string; keep: boolean }[];
}

export interface Service {
  spec: ServiceSpec;
  replicas: Replica[];
  launched: boolean;
  /** A job whose ranks restart as a group (restartsAsGroup): the generation they are in, from 0. */
  generation: number;
  /** Its generation is ending (generation.ts): every rank is being stopped, the next one comes. */
  generationEnding: boolean;
  /** Its shared ports once leased: `set` when leased here (held until replica 0 starts), none when replica 0's node leased them. */
  shared?: { host: string; assigned: AssignedPorts[]; set?: NamedReservation };
}

/** A service and its replicas, nothing started; `gpus`: one replica per GPU (replicas: gpus). */
export function makeService(spec: ServiceSpec, console: StackConsole, follow: boolean, gpus: GpuReplica[] | undefined): Service {
  const svc: Service = { spec, replicas: [], launched: false, generation: 0, generationEnding: false };
  const n = gpus ? gpus.length : (spec.replicas as number);
  const streamed = follow || spec.logs === 'attach';
  for (let r = 0; r < n; r++) {
    const label = `${spec.name}/${r}`;
    const fanout = (which: 'stdout' | 'stderr'): OutputFanout => {
      const c = spec.job ? console.passthrough(which, n > 1) : streamed ? console.follow(`${label} | `) : undefined;
      return new OutputFanout(c ? [c] : []);
    };
    let markEnded!: () => void;
    const ended = new Promise<void>((res) => (markEnded = res));
    svc.replicas.push({
      svc,
      index: r,
      ...(gpus ? { gpu: gpus[r]! } : {}),
      label,
      source: undefined,
      port: undefined,
      set: undefined,
      learned: [],
      lastLearned: undefined,
      refresh: undefined,
      unexpected: [],
      foreign: [],
      host: spec.host,
      state: 'pending',
      code: undefined,
      attempt: 0,
      restarts: 0,
      runner: undefined,
      attemptFailed: false,
      stopAsked: false,
      generationStop: false,
      everReady: false,
      final: false,
      ended,
      markEnded,
      out: fanout('stdout'),
      err: fanout('stderr'),
      diag: [],
    });
  }
  return svc;
}

/** A job of many ranks (here, or on several nodes) with restart: on-failure: they restart together, as the next generation. */
export function restartsAsGroup(svc: Service): boolean {
  const s = svc.spec;
  return s.job && s.restart.policy === 'on-failure' && (svc.replicas.length > 1 || s.nodes !== undefined);
}

/** The generation a replica's logs, diagnostics and records carry: only a rank of such a job has one. */
export function generationOf(rep: Replica): number | undefined {
  return restartsAsGroup(rep.svc) ? rep.svc.generation : undefined;
}

/** Its output streams are closed and `ended` settles: nothing more comes from this replica. */
export function endReplica(rep: Replica): void {
  rep.out.finish();
  rep.err.finish();
  rep.markEnded();
}

/** A replica waiting for its (re)start when the stack ended. */
export function endAbandoned(rep: Replica): void {
  rep.final = true;
  endReplica(rep);
}

export function firstLine(text: string): string {
  const i = text.indexOf('\n');
  return i < 0 ? text : text.slice(0, i);
}

/** "engine/1: the service exited…" → "the service exited…" (the label is shown separately). */
export function stripName(text: string, label: string): string {
  return text.startsWith(`${label}: `) ? text.slice(label.length + 2) : text;
}
