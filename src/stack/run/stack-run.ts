import { BerthError, EXIT } from '../../errors.js';
import type { HostSysctls } from '../../host/host-map.js';
import { guardRunDir } from '../../launch/watchdog/index.js';
import { gpuReplicas, type GpuReplica } from '../../slurm/replicas.js';
import { deferred } from '../../util/deferred.js';
import type { GraphNode, ReplicaStatus } from '../file/graph.js';
import type { Endpoint } from '../file/endpoint.js';
import { generationOf, makeService, restartsAsGroup, stripName, type Replica, type Service } from './replica.js';
import { SharedStrays } from './shared-strays.js';
import type { EndpointsDocument, ReplicaUpdate, StackEvent } from '../record/endpoints.js';
import { createRunDir } from '../record/create-stack-run-dir.js';
import type { RunDir } from '../record/stack-run-dir.js';
import { localTopology, type Topology } from '../file/ranks.js';
import { socketPathProblems } from '../file/replica-dir-path.js';
import { execSizeProblem, readLimits } from '../../launch/preflight.js';
import type { StackSpec } from '../file/spec.js';
import { StackConsole } from '../record/stack-console.js';
import { WriteFailures } from '../record/write-failures.js';
import type { RunStackOptions, StackFailure, StackResult } from './stack-handle.js';
import type { Happened } from './happened.js';

/* The state of one running stack, shared by its phases, and what they all do (record, warn, fail, wait, next). */
export class StackRun {
  readonly run: RunDir;
  /** Tells the watchdog to mark endpoints.json if berth dies before finish() writes it. */
  readonly runGuard: { ended(): void };
  readonly console: StackConsole;
  readonly services: Service[];
  readonly byName: Map<string, Service>;
  readonly nodes: GraphNode[];
  readonly startedOrder: string[] = [];
  readonly env: NodeJS.ProcessEnv;
  readonly procRoot: string;
  readonly topology: Topology;
  readonly t0 = performance.now();
  host: HostSysctls | undefined;
  ending: StackResult['reason'] | undefined;
  endSignal: NodeJS.Signals | undefined;
  /** Why berth stops when not for endSignal itself (the parent gone: stdin EOF). */
  endCause: string | undefined;
  failure: StackFailure | undefined;
  job: StackResult['job'];
  forced = false;
  stackReadyMs: number | undefined;
  private writeBroken = false;
  /** Writes that failed (a full disk): said once each; the end's status 0 becomes 74 (teardown.ts). */
  readonly writeFailures: WriteFailures;
  readonly whenReady = deferred<EndpointsDocument>();
  readonly whenDone = deferred<StackResult>();
  private readonly sleepers = new Set<() => void>();

  constructor(
    readonly spec: StackSpec,
    readonly o: RunStackOptions,
    readonly next: (h: Happened) => void,
  ) {
    this.env = o.env ?? process.env;
    // replicas: gpus — one replica per GPU of the Slurm job, known only now (src/slurm/replicas.ts).
    const gpuPlans = new Map<string, GpuReplica[]>();
    for (const s of spec.services) {
      if (s.replicas !== 'gpus') continue;
      try {
        gpuPlans.set(s.name, gpuReplicas(s.name, this.env).replicas);
      } catch (e) {
        if (e instanceof BerthError) throw new BerthError(e.exitCode, `${spec.file}:${s.line}: ${e.message}`, e.details);
        throw e;
      }
    }
    this.procRoot = o.procRoot ?? '/proc';
    this.topology = o.topology ?? localTopology(this.env);
    // A command too long for exec (E2BIG), as written, is refused before anything is made or leased, as berth run
    // does; placeholders that grow later ({x.urls}, spreads) are the launch's own check, at the replica's start.
    const limits = readLimits();
    const long = spec.services.flatMap((s) => {
      const problem = execSizeProblem(s.command, { ...this.env, ...s.env }, limits);
      return problem === undefined ? [] : [`${spec.file}:${s.line}: service "${s.name}": ${problem}`];
    });
    if (long.length > 0) throw new BerthError(EXIT.USAGE, long.join('\n'));
    this.run = createRunDir({
      stack: spec.file,
      ...(o.runDir !== undefined ? { dir: o.runDir } : {}),
      ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
      ...((o.generation ?? 0) > 0 ? { continues: true } : {}),
    });
    // Unix sockets under {dir} must fit sun_path in this run directory: refused before anything starts.
    const deep = socketPathProblems(spec, this.run.path);
    if (deep.length > 0) throw new BerthError(EXIT.USAGE, deep.join('\n'), { path: this.run.path });
    this.runGuard = guardRunDir(this.run.path);
    this.console = new StackConsole({
      stdout: o.stdout === undefined ? process.stdout : o.stdout,
      stderr: o.stderr === undefined ? process.stderr : o.stderr,
      status: o.status ?? 'off',
      env: this.env,
    });
    // Said as berth's warnings are: above the status display, and to the caller's onWarning.
    this.writeFailures = new WriteFailures((text) => {
      this.console.message(text);
      this.o.onWarning?.(text.replace(/^berth: /, ''));
    });
    this.run.failures = this.writeFailures;
    this.nodes = spec.services.map((s) => ({ name: s.name, dependsOn: s.dependsOn }));
    // External services take their place in the stop order (teardown calls o.stopExternal), as started first.
    for (const x of o.externalServices ?? []) {
      this.nodes.push(x);
      this.startedOrder.push(x.name);
    }
    for (const [name, eps] of o.external ?? []) this.external.set(name, { endpoints: eps, statuses: eps.map(() => ({ state: 'ready' })) });
    this.services = spec.services.map((s) => makeService(s, this.console, o.follow === true, gpuPlans.get(s.name)));
    this.byName = new Map(this.services.map((s) => [s.spec.name, s]));
    if (this.services.some(restartsAsGroup)) {
      this.run.generation = o.generation ?? 0;
      for (const svc of this.services) if (restartsAsGroup(svc)) svc.generation = this.run.generation;
    }
    // Callers that only await `done` must not crash on an unhandled rejection.
    this.whenReady.promise.catch(() => {});
  }

  get replicas(): Replica[] {
    return this.services.flatMap((s) => s.replicas);
  }

  /** A replica's state change: events.jsonl, endpoints.json, the status view (unless `shown: false`), the caller's onEvent. */
  update(rep: Replica, u: Omit<ReplicaUpdate, 'service' | 'replica'>, shown = true): void {
    rep.state = u.state;
    if (u.code !== undefined) rep.code = u.code;
    let ev: StackEvent;
    try {
      const g = generationOf(rep);
      ev = this.run.update({
        service: rep.svc.spec.name,
        replica: rep.index,
        scheme: rep.svc.spec.scheme,
        ...(g !== undefined ? { generation: g } : {}),
        ...u,
      });
    } catch (e) {
      // The run directory is the stack's record: without it, stop (once).
      if (!this.writeBroken) {
        this.writeBroken = true;
        const err = e instanceof BerthError ? e : new BerthError(EXIT.IOERR, String(e));
        this.failStack(rep, err.exitCode, err.message);
      }
      return;
    }
    this.emit(ev, shown);
  }

  private emit(ev: StackEvent, shown: boolean): void {
    if (shown) this.console.event(ev);
    this.callerHook(() => this.o.onEvent?.(ev));
  }

  /** Calls the caller's onEvent, onReady or onReserved. */
  callerHook(call: () => void): void {
    try {
      call();
    } catch {
      // the caller's problem: it must not break the stack
    }
  }

  /** Every port is reserved and scheduling has begun. */
  reserved = false;
  /** Ends the reservation at the next port when the stack ends meanwhile (teardown.ts). */
  readonly reserveAbort = new AbortController();
  /** The run directory is final (teardown's finish()): nothing more is recorded. */
  closed = false;

  /** A replica that is not one of ours (another node's): recorded and shown like ours. */
  record(u: ReplicaUpdate): void {
    if (this.closed) return;
    let ev: StackEvent;
    try {
      ev = this.run.update(u);
    } catch {
      return; // our own replicas' next update reports a broken run directory
    }
    this.emit(ev, true);
  }

  /** The replicas' audit lines, grouped so that replicas on one port are named in one line. */
  readonly sharedStrays = new SharedStrays(
    (m) => this.warn(m),
    () => this.stackReadyMs !== undefined || this.ending !== undefined,
  );

  warn(message: string): void {
    this.console.message(`berth: warning: ${message}`);
    this.o.onWarning?.(message);
  }

  /** External services known so far (RunStackOptions.external, then StackHandle.setExternal). */
  readonly external = new Map<string, { endpoints: readonly Endpoint[]; statuses: readonly ReplicaStatus[] }>();

  /** Every node's replicas of a service in RunStackOptions.peerServices, once StackHandle.setPeers gave them. */
  readonly peers = new Map<string, readonly Endpoint[]>();

  /** A peerServices service whose peers are not known yet: it may not start. */
  waitsForPeers(name: string): boolean {
    return this.o.peerServices?.includes(name) === true && !this.peers.has(name);
  }

  /** The replicas of a service as its dependents' conditions see them (an external one: pending until it is known). */
  statuses(name: string): ReplicaStatus[] {
    const ext = this.byName.has(name) ? undefined : this.external.get(name);
    if (ext) return [...ext.statuses];
    if (!this.byName.has(name) && this.o.externalServices?.some((x) => x.name === name)) return [{ state: 'pending' }];
    return (this.byName.get(name)?.replicas ?? []).map((r) => ({ state: r.state, ...(r.code !== undefined ? { code: r.code } : {}) }));
  }

  /** A wait that the end of the stack cuts short. */
  sleep(ms: number): Promise<void> {
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

  /** Cuts every sleep() short (the stack is ending). */
  wakeSleepers(): void {
    for (const wake of [...this.sleepers]) wake();
  }

  failStack(rep: Replica, exitCode: number, reason: string): void {
    if (this.ending) return;
    this.failure = { service: rep.svc.spec.name, replica: rep.index, exitCode, reason: stripName(reason, rep.label), logs: this.logsOf(rep) };
    this.next({ kind: 'end', reason: 'failed' });
  }

  /** The replica's log files now (a job's rank: its generation's). */
  logsOf(rep: Replica): { out: string; err: string } {
    return this.run.logFiles(rep.svc.spec.name, rep.index, generationOf(rep));
  }

  internalError(e: unknown): void {
    const msg = `internal error (a bug in berth): ${(e as Error)?.stack ?? String(e)}`;
    if (this.ending) {
      this.warn(msg);
      return;
    }
    const rep = this.services[0]!.replicas[0]!;
    this.failure = { service: '(berth)', replica: 0, exitCode: EXIT.SOFTWARE, reason: msg, logs: this.run.logFiles(rep.svc.spec.name, rep.index) };
    this.next({ kind: 'end', reason: 'failed' });
  }
}
