import { readdirSync, rmdirSync, rmSync } from 'node:fs';
import { reserve, setOptions } from '../allocate/reserve.js';
import { reserveSet } from '../allocate/reserve-set.js';
import type { PortSource, Reservation, ReserveOptions } from '../allocate/types.js';
import { BerthError, EXIT } from '../errors.js';
import { readSysctls } from '../host/sysctl.js';
import type { HostSysctls } from '../host/types.js';
import { launch, signalNumber } from '../launch/launch.js';
import { guardRunDir } from '../launch/watchdog.js';
import type { ExitInfo, LaunchEvent, LaunchHandle, LaunchOptions, ReadySpec } from '../launch/types.js';
import { deferred } from '../util/deferred.js';
import { conditionStatus, teardownWaves, type GraphNode, type ReplicaStatus } from './graph.js';
import { gpuReplicas, type GpuReplica } from '../slurm/replicas.js';
import { resolveTemplate, type Endpoint, type ResolveContext } from './placeholders.js';
import { OutputFanout, type ChunkConsumer } from './replica-output.js';
import { createRunDir, type EndpointsDocument, type ReplicaUpdate, type RunDir, type StackEvent } from './run-dir.js';
import { replicaSource } from './sources.js';
import type { ReplicaState, ServiceSpec, StackSpec } from './spec.js';
import { StackConsole, type StatusMode } from './stack-console.js';

/*
 * `berth up`: every replica of every service is one launch() on a port reserved up front
 * (or a portless launch), so a stack either gets all its ports or starts nothing. Services
 * start as soon as their dependencies meet their conditions; placeholders are filled from
 * the dependencies' real endpoints at that moment. Every state change goes through
 * RunDir.update (events.jsonl, then endpoints.json atomically) and the status view. The
 * stack ends when its job exits, when a service fails for good (then it is torn down:
 * dependents first, latest started first, TERM then KILL after each service's stop_grace),
 * when asked to stop, or when every service has exited 0.
 */

export interface RunStackOptions {
  /** --run-dir; default ./berth-runs/<UTC timestamp> under `cwd`. */
  runDir?: string;
  /** Base of the default run directory (default process.cwd()). */
  cwd?: string;
  /** Stream every service's output, prefixed "service/replica | ", on stderr (`--follow`). */
  follow?: boolean;
  /** A job's stdout goes here (default process.stdout; null: logs only). */
  stdout?: NodeJS.WritableStream | null;
  /** A job's stderr, followed output, the status view and messages (default process.stderr). */
  stderr?: NodeJS.WritableStream | null;
  /** Status display on `stderr`: auto (table on a terminal, lines otherwise), live, plain, off (default). */
  status?: StatusMode;
  /** Base environment of the services (default process.env). */
  env?: NodeJS.ProcessEnv;
  procRoot?: string;
  /** Lease directory override. */
  stateDir?: string;
  /** One probe attempt may take this long (default 5s). */
  probeTimeoutMs?: number;
  /** Every state change, as written to events.jsonl. */
  onEvent?: (e: StackEvent) => void;
  /**
   * Every non-job service is ready (or has completed). Called synchronously before the
   * services waiting for that moment are started, so output printed here comes first.
   */
  onReady?: (doc: EndpointsDocument) => void;
  /** berth's own warnings (launch warnings, a restarted replica's changed port). */
  onWarning?: (message: string) => void;
  /**
   * Services running elsewhere (a multi-node stack's other nodes, see multi-node.ts): not in
   * the spec, always ready, with these endpoints for the placeholders of their dependents.
   */
  external?: ReadonlyMap<string, readonly Endpoint[]>;
}

export interface StackFailure {
  service: string;
  replica: number;
  /** The class berth exits with: 69 no port, 70 failed, 75 not ready in time (64/74 rarely). */
  exitCode: number;
  /** What happened, without the diagnostics note. */
  reason: string;
  /** The replica's diagnostics folder (diagnostics.json, stdout.log, stderr.log), when written. */
  diagnostics?: string;
  bundle?: string;
  logs: { out: string; err: string };
}

export interface StackResult {
  /** What `berth up` exits with. */
  exitCode: number;
  /**
   * job: the job exited (exitCode is its status); failed: a service failed for good;
   * signal: stopped by a signal (128+N); stopped: stop() without a signal (0);
   * completed: no job, and every service exited 0.
   */
  reason: 'job' | 'failed' | 'signal' | 'stopped' | 'completed';
  signal?: NodeJS.Signals;
  failure?: StackFailure;
  job?: { service: string; status: number; code: number | null; signal: NodeJS.Signals | null };
  runDir: string;
  /** ms from runStack() until every non-job service was ready, when that happened. */
  readyMs?: number;
}

export interface StackHandle {
  readonly spec: StackSpec;
  /** Absolute path of the run directory. */
  readonly runDir: string;
  /** Resolves with the endpoints once every non-job service is ready; rejects if the stack ends first. */
  readonly ready: Promise<EndpointsDocument>;
  /** Resolves (never rejects) once every service has stopped and the run directory is final. */
  readonly done: Promise<StackResult>;
  /** The current endpoints.json document. */
  endpoints(): EndpointsDocument;
  /**
   * Orderly teardown. `signal`: what berth received (the result is 128+N); `force`: SIGKILL
   * everything still running now (a second Ctrl-C).
   */
  stop(opts?: { signal?: NodeJS.Signals; force?: boolean }): Promise<StackResult>;
  /** A message on the status stream, above a live table (nothing when the status display is off). */
  say(text: string): void;
}

/** Exit classes worth another attempt (a port lost, a crash, a slow start); usage and I/O errors repeat. */
const RESTARTABLE = new Set<number>([EXIT.UNAVAILABLE, EXIT.SOFTWARE, EXIT.TEMPFAIL]);
const RESTART_BACKOFF_MS = 250;
const RESTART_BACKOFF_MAX_MS = 5_000;

const STARTED_STATES: ReadonlySet<ReplicaState> = new Set(['starting', 'owned', 'ready']);

/** Starts a stack. Throws BerthError for a stack it refuses (65) or a run directory it cannot make (64/74). */
export function runStack(spec: StackSpec, opts: RunStackOptions = {}): StackHandle {
  return new Stack(spec, opts).handle;
}

interface Replica {
  svc: Service;
  index: number;
  /** Its GPU under `replicas: gpus`: window, {gpu} and CUDA_VISIBLE_DEVICES. */
  gpu?: GpuReplica;
  /** "engine/1" */
  label: string;
  source: PortSource | undefined;
  port: number | undefined;
  /** Held until handed to launch() (which consumes it). */
  reservation: Reservation | undefined;
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
  everReady: boolean;
  /** No further attempt will follow: the runner's exit is this replica's end. */
  final: boolean;
  /** Settles when the replica's last runner has exited and its logs are closed. */
  ended: Promise<void>;
  markEnded: () => void;
  /** Output beyond the log (job passthrough, --follow); the logs are written by launch(). */
  out: OutputFanout;
  err: OutputFanout;
  /** Diagnostics folders of attempts, kept when a bundle was written. */
  diag: { dir: string; keep: boolean }[];
}

interface Service {
  spec: ServiceSpec;
  replicas: Replica[];
  launched: boolean;
}

class Stack {
  readonly handle: StackHandle;
  private readonly run: RunDir;
  /** Tells the watchdog to mark endpoints.json if berth dies before finish() writes it. */
  private readonly runGuard: { ended(): void };
  private readonly console: StackConsole;
  private readonly services: Service[];
  private readonly byName: Map<string, Service>;
  private readonly nodes: GraphNode[];
  private readonly startedOrder: string[] = [];
  private readonly env: NodeJS.ProcessEnv;
  private readonly gpuPlans = new Map<string, GpuReplica[]>();
  private readonly procRoot: string;
  private readonly t0 = performance.now();
  private host: HostSysctls | undefined;
  private ending: StackResult['reason'] | undefined;
  private endSignal: NodeJS.Signals | undefined;
  private failure: StackFailure | undefined;
  private job: StackResult['job'];
  private forced = false;
  private stackReadyMs: number | undefined;
  private writeBroken = false;
  private readonly whenReady = deferred<EndpointsDocument>();
  private readonly whenDone = deferred<StackResult>();
  private readonly sleepers = new Set<() => void>();

  constructor(
    readonly spec: StackSpec,
    private readonly o: RunStackOptions,
  ) {
    this.env = o.env ?? process.env;
    // replicas: gpus — one replica per GPU of the Slurm job, known only now (src/slurm/replicas.ts).
    for (const s of spec.services) {
      if (s.replicas !== 'gpus') continue;
      try {
        this.gpuPlans.set(s.name, gpuReplicas(s.name, this.env).replicas);
      } catch (e) {
        if (e instanceof BerthError) throw new BerthError(e.exitCode, `${spec.file}:${s.line}: ${e.message}`, e.details);
        throw e;
      }
    }
    this.procRoot = o.procRoot ?? '/proc';
    this.run = createRunDir({ stack: spec.file, ...(o.runDir !== undefined ? { dir: o.runDir } : {}), ...(o.cwd !== undefined ? { cwd: o.cwd } : {}) });
    this.runGuard = guardRunDir(this.run.path);
    this.console = new StackConsole({ stdout: o.stdout === undefined ? process.stdout : o.stdout, stderr: o.stderr === undefined ? process.stderr : o.stderr, status: o.status ?? 'off', env: this.env });
    this.nodes = spec.services.map((s) => ({ name: s.name, dependsOn: s.dependsOn }));
    this.services = spec.services.map((s) => this.makeService(s));
    this.byName = new Map(this.services.map((s) => [s.spec.name, s]));

    // Callers that only await `done` must not crash on an unhandled rejection.
    this.whenReady.promise.catch(() => {});
    this.handle = {
      spec,
      runDir: this.run.path,
      ready: this.whenReady.promise,
      done: this.whenDone.promise,
      endpoints: () => this.run.endpointsDocument(),
      stop: (so) => this.stop(so?.signal, so?.force === true),
      say: (text) => this.console.message(text),
    };
    // After the caller has its handle (a stack without ports could otherwise be ready
    // before runStack() returns).
    queueMicrotask(() => void this.main());
  }

  private makeService(spec: ServiceSpec): Service {
    const svc: Service = { spec, replicas: [], launched: false };
    const gpus = this.gpuPlans.get(spec.name);
    const n = gpus ? gpus.length : (spec.replicas as number);
    const follow = this.o.follow === true || spec.logs === 'attach';
    for (let r = 0; r < n; r++) {
      const label = `${spec.name}/${r}`;
      const outC: ChunkConsumer[] = [];
      const errC: ChunkConsumer[] = [];
      if (spec.job) {
        const po = this.console.passthrough('stdout');
        const pe = this.console.passthrough('stderr');
        if (po) outC.push(po);
        if (pe) errC.push(pe);
      } else if (follow) {
        const fo = this.console.follow(`${label} | `);
        const fe = this.console.follow(`${label} | `);
        if (fo) outC.push(fo);
        if (fe) errC.push(fe);
      }
      let markEnded!: () => void;
      const ended = new Promise<void>((res) => (markEnded = res));
      svc.replicas.push({
        svc,
        index: r,
        ...(gpus ? { gpu: gpus[r]! } : {}),
        label,
        source: undefined,
        port: undefined,
        reservation: undefined,
        host: spec.host,
        state: 'pending',
        code: undefined,
        attempt: 0,
        restarts: 0,
        runner: undefined,
        attemptFailed: false,
        stopAsked: false,
        everReady: false,
        final: false,
        ended,
        markEnded,
        out: new OutputFanout(outC),
        err: new OutputFanout(errC),
        diag: [],
      });
    }
    return svc;
  }

  // ---- state changes ----------------------------------------------------------------------

  private update(rep: Replica, u: Omit<ReplicaUpdate, 'service' | 'replica'>): void {
    rep.state = u.state;
    if (u.code !== undefined) rep.code = u.code;
    let ev: StackEvent;
    try {
      ev = this.run.update({ service: rep.svc.spec.name, replica: rep.index, ...u });
    } catch (e) {
      // The run directory is the stack's record: without it, stop (once).
      if (!this.writeBroken) {
        this.writeBroken = true;
        const err = e instanceof BerthError ? e : new BerthError(EXIT.IOERR, String(e));
        this.failStack(rep, err.exitCode, err.message);
      }
      return;
    }
    this.console.event(ev);
    try {
      this.o.onEvent?.(ev);
    } catch {
      // a caller's listener must not break the stack
    }
  }

  private warn(message: string): void {
    this.console.message(`berth: warning: ${message}`);
    this.o.onWarning?.(message);
  }

  private statuses(name: string): ReplicaStatus[] {
    const ext = this.byName.has(name) ? undefined : this.o.external?.get(name);
    if (ext) return ext.map(() => ({ state: 'ready' }));
    return (this.byName.get(name)?.replicas ?? []).map((r) => ({ state: r.state, ...(r.code !== undefined ? { code: r.code } : {}) }));
  }

  // ---- start ------------------------------------------------------------------------------

  private async main(): Promise<void> {
    try {
      // All ports first, as one set (allocate/reserve-set.ts): a stack that cannot have every
      // port starts nothing, and stacks competing for the same ports never each hold half.
      const reps = this.services.flatMap((svc) => svc.replicas);
      const wanting: Replica[] = [];
      let reservations: Reservation[] = [];
      let failing: Replica | undefined;
      try {
        for (const rep of reps) {
          failing = rep;
          rep.source = this.sourceOf(rep);
          if (rep.source) wanting.push(rep);
        }
        failing = undefined;
        if (wanting.length > 0) {
          const requests = wanting.map((rep) => {
            const ro = this.reserveOptions(rep, rep.source!);
            return { source: rep.source!, count: 1, name: ro.name!, ...(ro.holdAddress !== undefined ? { holdAddress: ro.holdAddress } : {}) };
          });
          reservations = await reserveSet(requests, setOptions(this.reserveOptions(wanting[0]!, wanting[0]!.source!)));
        }
      } catch (e) {
        const err = e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, `internal error: ${(e as Error)?.stack ?? String(e)}`);
        const at = err.details?.request;
        const rep = failing ?? (typeof at === 'number' ? wanting[at] : undefined) ?? wanting[0] ?? reps[0]!;
        this.update(rep, { state: 'failed', code: err.exitCode, detail: firstLine(err.message) });
        this.failStack(rep, err.exitCode, `no port: ${err.message}`);
        return;
      }
      wanting.forEach((rep, i) => (rep.reservation = reservations[i]));
      if (this.ending) {
        // stop() came while reserving, after the teardown gave back what it knew of
        for (const rep of wanting) await this.releaseReservation(rep);
        return;
      }
      for (const rep of reps) {
        if (rep.reservation) rep.port = rep.reservation.ports[0];
        this.update(rep, { state: 'pending', ...(rep.port !== undefined ? { port: rep.port } : {}) });
      }
      this.schedule();
    } catch (e) {
      this.internalError(e);
    }
  }

  private sourceOf(rep: Replica): PortSource | undefined {
    if (rep.svc.spec.ports.kind === 'default') this.host ??= readSysctls(this.procRoot);
    // The host is only read for the built-in band; other kinds ignore it.
    return replicaSource(this.spec, rep.svc.spec, rep.index, this.host ?? ({} as HostSysctls), rep.gpu?.gpu);
  }

  private reserveOptions(rep: Replica, source: PortSource): ReserveOptions {
    const ro: ReserveOptions = { source, ownerPid: process.pid, name: `${this.spec.file}:${rep.label}`, procRoot: this.procRoot };
    if (this.o.stateDir !== undefined) ro.stateDir = this.o.stateDir;
    // fd handoff: the hold is handed over as the service's socket, so it listens on `host:`.
    if (rep.svc.spec.handoff === 'fd') ro.holdAddress = rep.svc.spec.host;
    return ro;
  }

  /** Starts what may start, notices the stack being ready, blocked or finished. */
  private schedule(): void {
    if (this.ending) return;
    this.checkStackReady();
    for (const svc of this.services) {
      if (svc.launched || this.ending) continue;
      if (svc.spec.dependsOn.every((d) => conditionStatus(d.condition, this.statuses(d.service)) === 'met')) this.startService(svc);
    }
    if (this.ending) return;
    for (const svc of this.services) {
      if (svc.launched) continue;
      for (const d of svc.spec.dependsOn) {
        if (conditionStatus(d.condition, this.statuses(d.service)) !== 'never') continue;
        const dep = this.byName.get(d.service)!;
        const gone = dep.replicas.find((r) => r.state === 'exited' || r.state === 'failed') ?? dep.replicas[0]!;
        const why = gone.code !== undefined && gone.code !== null ? ` (status ${gone.code})` : '';
        this.failStack(gone, EXIT.SOFTWARE, `${svc.spec.name} cannot start: it waits for ${d.service} to be ${d.condition === 'completed' ? 'completed (exit 0)' : d.condition}, but ${gone.label} ${gone.state}${why}`);
        return;
      }
    }
    // No job: the stack is over once nothing runs and nothing can start.
    if (!this.services.some((s) => s.spec.job) && this.services.every((s) => s.launched && s.replicas.every((r) => r.final && (r.state === 'exited' || r.state === 'failed')))) {
      this.beginTeardown('completed');
    }
  }

  private checkStackReady(): void {
    if (this.stackReadyMs !== undefined || this.ending) return;
    const up = this.services.every((s) => s.spec.job || s.replicas.every((r) => r.everReady || (r.state === 'exited' && r.code === 0)));
    if (!up) return;
    this.stackReadyMs = performance.now() - this.t0;
    const doc = this.run.endpointsDocument();
    try {
      this.o.onReady?.(doc);
    } catch {
      // the caller's problem, not the stack's
    }
    this.whenReady.resolve(doc);
  }

  private startService(svc: Service): void {
    svc.launched = true;
    this.startedOrder.push(svc.spec.name);
    for (const rep of svc.replicas) this.startAttempt(rep);
  }

  /** The endpoints of the services this one depends on, as they are now. */
  private resolveContext(rep: Replica): ResolveContext {
    const endpoints = new Map<string, Endpoint[]>();
    for (const d of rep.svc.spec.dependsOn) {
      const dep = this.byName.get(d.service);
      if (!dep) {
        const ext = this.o.external?.get(d.service);
        if (ext) endpoints.set(d.service, [...ext]);
        continue;
      }
      endpoints.set(
        d.service,
        dep.replicas.filter((r) => r.port !== undefined).map((r) => ({ host: r.host, port: r.port! })),
      );
    }
    const ctx: ResolveContext = { name: rep.svc.spec.name, replica: rep.index, host: rep.svc.spec.host, endpoints };
    if (rep.port !== undefined) ctx.port = rep.port;
    if (rep.gpu) ctx.gpu = rep.gpu.gpu;
    return ctx;
  }

  private startAttempt(rep: Replica): void {
    if (this.ending) return this.endAbandoned(rep);
    const s = rep.svc.spec;
    const attempt = rep.attempt;
    const diagDir = this.run.diagDir(s.name, rep.index, attempt);
    rep.diag.push({ dir: diagDir, keep: false });
    rep.attemptFailed = false;
    rep.stopAsked = false;
    let command: string[];
    let env: NodeJS.ProcessEnv;
    let ready: ReadySpec | undefined;
    try {
      const ctx = this.resolveContext(rep);
      command = s.command.map((a) => resolveTemplate(a, ctx));
      env = { ...this.env };
      if (rep.gpu) {
        // The GPU as the job sees it; the service's own env: may still override it.
        env.CUDA_VISIBLE_DEVICES = rep.gpu.cudaVisibleDevices;
        env.BERTH_GPU = String(rep.gpu.gpu);
      }
      for (const [k, v] of Object.entries(s.env)) env[k] = resolveTemplate(v, ctx);
      env.BERTH_SERVICE = s.name;
      env.BERTH_REPLICA = String(rep.index);
      env.BERTH_RUN_DIR = this.run.path;
      if (s.ready?.kind === 'http') ready = { kind: 'http', url: resolveTemplate(s.ready.url, ctx) };
      else if (s.ready?.kind === 'cmd') ready = { kind: 'cmd', command: resolveTemplate(s.ready.command, ctx) };
      else ready = s.ready;
    } catch (e) {
      const err = e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, String(e));
      this.update(rep, { state: 'failed', code: err.exitCode, detail: firstLine(err.message) });
      rep.final = true;
      void this.releaseReservation(rep);
      rep.markEnded();
      this.failStack(rep, err.exitCode, err.message);
      return;
    }
    const onEvent = (e: LaunchEvent) => {
      try {
        this.onRunnerEvent(rep, attempt, e);
      } catch (err) {
        this.internalError(err);
      }
    };
    const logs = this.run.logFiles(s.name, rep.index);
    // Placeholders are the stack's own (resolved above, `{{port}` a literal `{port}`): launch
    // takes command and ready as they are. The replica's logs are launch's logs.
    const lo: LaunchOptions = {
      command,
      substitute: false,
      name: rep.label,
      env,
      cwd: s.cwd,
      diagDir,
      stdoutLog: logs.out,
      stderrLog: logs.err,
      stopGraceMs: s.stopGraceMs,
      stdout: rep.out.idle ? null : rep.out,
      stderr: rep.err.idle ? null : rep.err,
      onEvent,
      procRoot: this.procRoot,
    };
    if (rep.reservation) {
      lo.reservation = rep.reservation;
      lo.bind = s.host;
      lo.handoff = s.handoff;
      rep.reservation = undefined; // launch() consumes it
    } else {
      // No port (typically the job, a client): spawned is started, or the probe says ready.
      lo.portless = true;
    }
    if (ready) lo.ready = ready;
    if (s.readyTimeoutMs !== undefined) lo.readyTimeoutMs = s.readyTimeoutMs;
    if (this.o.probeTimeoutMs !== undefined) lo.probeTimeoutMs = this.o.probeTimeoutMs;
    if (this.o.stateDir !== undefined) lo.stateDir = this.o.stateDir;
    const runner = launch(lo);
    rep.runner = runner;
    void runner.exited.then((info) => {
      try {
        this.onRunnerExited(rep, attempt, info);
      } catch (err) {
        this.internalError(err);
      }
    });
  }

  private onRunnerEvent(rep: Replica, attempt: number, e: LaunchEvent): void {
    if (attempt !== rep.attempt) return;
    const port = rep.port !== undefined ? { port: rep.port } : {};
    switch (e.type) {
      case 'spawned':
        this.update(rep, { state: 'starting', pid: e.pid, ...port });
        break;
      case 'owned':
        this.update(rep, { state: 'owned', pid: e.pid });
        break;
      case 'ready': {
        if (rep.port !== undefined && e.info.host !== '') rep.host = e.info.host;
        rep.everReady = true;
        this.update(rep, { state: 'ready', pid: e.info.pid, ...(rep.port !== undefined ? { host: rep.host } : {}) });
        this.schedule();
        break;
      }
      case 'failed': {
        const d = rep.diag[rep.diag.length - 1];
        if (d && e.bundle) d.keep = true;
        // Asked to stop during the teardown: its exit is reported as a stop, not a cause.
        if (this.ending && rep.stopAsked) break;
        rep.attemptFailed = true;
        const reason = stripName(firstLine(e.message), rep.label);
        this.update(rep, { state: 'failed', code: e.exitCode, detail: reason });
        this.replicaFailed(rep, e.exitCode, reason, e.bundle);
        break;
      }
      case 'warning':
        this.warn(e.message);
        break;
      case 'reserved':
      case 'stopping':
      case 'exited':
        // stopping is reported when berth asks; exits through the `exited` promise
        break;
    }
  }

  private onRunnerExited(rep: Replica, attempt: number, info: ExitInfo): void {
    if (attempt !== rep.attempt) return;
    const d = rep.diag[rep.diag.length - 1];
    if (d && info.bundle) d.keep = true;
    if (rep.attemptFailed) {
      // The failure was reported at its 'failed' event; a restart waits for this exit.
      if (rep.final) this.endReplica(rep);
      return;
    }
    const status = info.exitCode;
    const sig = info.signal ?? undefined;
    if (rep.stopAsked || this.ending) {
      this.update(rep, { state: 'exited', code: status, ...(sig ? { signal: sig } : {}) });
      rep.final = true;
      this.endReplica(rep);
      return;
    }
    if (rep.svc.spec.job) {
      if (status !== 0 && this.restartLeft(rep, EXIT.SOFTWARE)) {
        this.update(rep, { state: 'failed', code: status, detail: `exited with status ${status}` });
        this.restart(rep, `exited with status ${status}`);
        return;
      }
      this.update(rep, { state: 'exited', code: status, ...(sig ? { signal: sig } : {}) });
      rep.final = true;
      this.endReplica(rep);
      this.job = { service: rep.svc.spec.name, status, code: info.code, signal: info.signal };
      this.beginTeardown('job');
      return;
    }
    if (status === 0) {
      // A one-shot service (something may wait for it to complete).
      this.update(rep, { state: 'exited', code: 0 });
      rep.final = true;
      this.endReplica(rep);
      this.schedule();
      return;
    }
    const reason = info.signal ? `was killed by ${info.signal} after it was ready` : `exited with status ${status} after it was ready`;
    this.update(rep, { state: 'failed', code: status, ...(sig ? { signal: sig } : {}), detail: reason });
    rep.attemptFailed = true;
    this.replicaFailed(rep, EXIT.SOFTWARE, reason, info.bundle);
    if (rep.final) this.endReplica(rep);
  }

  private endReplica(rep: Replica): void {
    rep.out.finish();
    rep.err.finish();
    rep.markEnded();
  }

  // ---- failure and restart -------------------------------------------------------------------

  private restartLeft(rep: Replica, exitCode: number): boolean {
    const r = rep.svc.spec.restart;
    return !this.ending && r.policy === 'on-failure' && rep.restarts < r.limit && RESTARTABLE.has(exitCode);
  }

  private replicaFailed(rep: Replica, exitCode: number, reason: string, bundle: string | undefined): void {
    if (this.restartLeft(rep, exitCode)) {
      this.restart(rep, reason);
      return;
    }
    rep.final = true;
    if (this.ending) return;
    const d = rep.diag[rep.diag.length - 1];
    this.failure = {
      service: rep.svc.spec.name,
      replica: rep.index,
      exitCode,
      reason,
      logs: this.run.logFiles(rep.svc.spec.name, rep.index),
      ...(d && bundle ? { diagnostics: d.dir, bundle } : {}),
    };
    this.beginTeardown('failed');
  }

  private restart(rep: Replica, reason: string): void {
    rep.restarts++;
    const limit = rep.svc.spec.restart.limit;
    const delay = Math.min(RESTART_BACKOFF_MS * 2 ** (rep.restarts - 1), RESTART_BACKOFF_MAX_MS);
    const old = rep.runner;
    rep.attempt++;
    this.update(rep, { state: 'pending', detail: `restart ${rep.restarts} of ${limit} in ${delay}ms: ${reason}` });
    void (async () => {
      // The old attempt releases its lease when it has fully ended.
      await old?.exited;
      await this.sleep(delay);
      if (this.ending) return this.endAbandoned(rep);
      const before = rep.port;
      try {
        rep.reservation = await this.reserveAgain(rep);
      } catch (e) {
        const err = e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, String(e));
        this.update(rep, { state: 'failed', code: err.exitCode, detail: firstLine(err.message) });
        this.replicaFailed(rep, err.exitCode, `restart: no port: ${firstLine(err.message)}`, undefined);
        if (rep.final) this.endReplica(rep);
        return;
      }
      if (this.ending) {
        await this.releaseReservation(rep);
        return this.endAbandoned(rep);
      }
      if (rep.reservation) {
        rep.port = rep.reservation.ports[0];
        if (before !== undefined && rep.port !== before) {
          this.warn(`${rep.label} restarted on port ${rep.port} (port ${before} was no longer free); services started before with its old address keep it`);
        }
        this.update(rep, { state: 'pending', port: rep.port! });
      }
      this.startAttempt(rep);
    })().catch((e) => this.internalError(e));
  }

  /** A wait that the end of the stack cuts short. */
  private sleep(ms: number): Promise<void> {
    if (this.ending) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.sleepers.delete(done);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.sleepers.add(done);
    });
  }

  /** Same port as before when it is still free (dependents know it), else any of its source. */
  private async reserveAgain(rep: Replica): Promise<Reservation | undefined> {
    if (!rep.source) return undefined;
    if (rep.port !== undefined) {
      try {
        return await reserve(this.reserveOptions(rep, { kind: 'port', port: rep.port }));
      } catch {
        // taken meanwhile: any port of the source
      }
    }
    return reserve(this.reserveOptions(rep, rep.source));
  }

  /** A replica waiting for its restart when the stack ended. */
  private endAbandoned(rep: Replica): void {
    rep.final = true;
    this.endReplica(rep);
  }

  private failStack(rep: Replica, exitCode: number, reason: string): void {
    if (this.ending) return;
    this.failure = { service: rep.svc.spec.name, replica: rep.index, exitCode, reason: stripName(reason, rep.label), logs: this.run.logFiles(rep.svc.spec.name, rep.index) };
    this.beginTeardown('failed');
  }

  private internalError(e: unknown): void {
    const msg = `internal error (a bug in berth): ${(e as Error)?.stack ?? String(e)}`;
    if (this.ending) {
      this.warn(msg);
      return;
    }
    const rep = this.services[0]!.replicas[0]!;
    this.failure = { service: '(berth)', replica: 0, exitCode: EXIT.SOFTWARE, reason: msg, logs: this.run.logFiles(rep.svc.spec.name, rep.index) };
    this.beginTeardown('failed');
  }

  // ---- the end ------------------------------------------------------------------------------

  private stop(signal: NodeJS.Signals | undefined, force: boolean): Promise<StackResult> {
    if (!this.ending) {
      this.endSignal = signal;
      this.beginTeardown(signal ? 'signal' : 'stopped');
    }
    if (force) this.forceKill();
    return this.handle.done;
  }

  private forceKill(): void {
    this.forced = true;
    for (const svc of this.services) {
      for (const rep of svc.replicas) {
        if (!rep.runner || rep.final) continue;
        rep.stopAsked = true;
        rep.runner.signal('SIGKILL');
        void rep.runner.stop({ signal: 'SIGKILL', graceMs: 0 });
      }
    }
  }

  private beginTeardown(reason: StackResult['reason']): void {
    if (this.ending) return;
    this.ending = reason;
    if (this.stackReadyMs === undefined) {
      const why = reason === 'failed' && this.failure ? `${this.failure.service}/${this.failure.replica} failed: ${this.failure.reason}` : `the stack ended (${reason}) before it was ready`;
      this.whenReady.reject(new BerthError(this.failure?.exitCode ?? EXIT.SOFTWARE, why));
    }
    for (const wake of [...this.sleepers]) wake();
    void this.tearDown()
      .catch((e) => this.warn(`teardown: ${(e as Error)?.stack ?? String(e)}`))
      .then(() => this.finish());
  }

  /** Dependents first, latest started first; each wave only after the previous one has exited. */
  private async tearDown(): Promise<void> {
    const why =
      this.ending === 'failed' && this.failure
        ? `stack stopping: ${this.failure.service}/${this.failure.replica} failed`
        : this.ending === 'job'
          ? `stack stopping: the job ${this.job?.service ?? ''} exited`
          : this.ending === 'signal'
            ? `stack stopping: berth got ${this.endSignal}`
            : 'stack stopping';
    for (const wave of teardownWaves(this.nodes, this.startedOrder)) {
      const reps = wave.flatMap((name) => this.byName.get(name)?.replicas ?? []);
      await Promise.all(reps.map((rep) => this.stopReplica(rep, why)));
    }
    // Never started (or waiting for a restart): give their ports back.
    for (const svc of this.services) {
      for (const rep of svc.replicas) {
        await this.releaseReservation(rep);
        if (!rep.runner && !rep.final) this.endAbandoned(rep);
      }
    }
    await Promise.all(this.services.flatMap((s) => s.replicas.filter((r) => r.runner || r.final).map((r) => r.ended)));
  }

  private async stopReplica(rep: Replica, why: string): Promise<void> {
    const runner = rep.runner;
    if (!runner) return; // never launched
    if (!rep.final && !rep.attemptFailed && STARTED_STATES.has(rep.state)) {
      rep.stopAsked = true;
      this.update(rep, { state: 'stopping', detail: why });
      const signal = this.forced ? 'SIGKILL' : 'SIGTERM';
      void runner.stop({ signal, graceMs: this.forced ? 0 : rep.svc.spec.stopGraceMs });
    } else if (!rep.final && !rep.attemptFailed) {
      // Launched but not spawned yet (still pending): launch() ends it before the spawn.
      rep.stopAsked = true;
      void runner.stop({ signal: 'SIGTERM', graceMs: rep.svc.spec.stopGraceMs });
    }
    await runner.exited;
    await rep.ended;
  }

  private async releaseReservation(rep: Replica): Promise<void> {
    const r = rep.reservation;
    rep.reservation = undefined;
    if (!r) return;
    try {
      await r.release();
    } catch (e) {
      this.warn(`could not release the lease of port ${r.ports[0]} (${rep.label}): ${(e as Error).message}`);
    }
  }

  private finish(): void {
    // Clean attempts leave no diagnostics folder; failed ones keep theirs (never deleted).
    for (const svc of this.services) {
      for (const rep of svc.replicas) {
        rep.out.finish();
        rep.err.finish();
        for (const d of rep.diag) {
          if (d.keep) continue;
          try {
            rmSync(d.dir, { recursive: true, force: true });
          } catch {
            // a leftover folder is harmless
          }
        }
      }
    }
    const diagRoot = `${this.run.path}/diagnostics`;
    try {
      if (readdirSync(diagRoot).length === 0) rmdirSync(diagRoot);
    } catch {
      // none made
    }
    try {
      this.run.writeEndpoints();
    } catch {
      // reported when it first failed
    }
    this.runGuard.ended();
    this.run.close();
    this.console.close();
    const reason = this.ending!;
    let exitCode: number;
    if (reason === 'failed') exitCode = this.failure?.exitCode ?? EXIT.SOFTWARE;
    else if (reason === 'job') exitCode = this.job?.status ?? 0;
    else if (reason === 'signal') exitCode = 128 + signalNumber(this.endSignal ?? 'SIGTERM');
    else exitCode = 0;
    const result: StackResult = { exitCode, reason, runDir: this.run.path };
    if (this.endSignal) result.signal = this.endSignal;
    if (this.failure) result.failure = this.failure;
    if (this.job) result.job = this.job;
    if (this.stackReadyMs !== undefined) result.readyMs = Math.round(this.stackReadyMs);
    this.whenDone.resolve(result);
  }
}

function firstLine(text: string): string {
  const i = text.indexOf('\n');
  return i < 0 ? text : text.slice(0, i);
}

/** "engine/1: the service exited…" → "the service exited…" (the label is shown separately). */
function stripName(text: string, label: string): string {
  return text.startsWith(`${label}: `) ? text.slice(label.length + 2) : text;
}

