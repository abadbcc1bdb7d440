import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { basename, join } from 'node:path';
import { reserve } from '../allocate/reserve.js';
import { hasSourceOptions, pickSourceOptions } from '../allocate/source-options.js';
import type { Reservation, ReserveOptions } from '../allocate/types.js';
import { BerthError, EXIT } from '../errors.js';
import { listPids } from '../host/pids.js';
import type { SocketRow } from '../host/types.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { deferred } from '../util/deferred.js';
import { snapshotHost, writeBundle } from './diagnostics.js';
import { resolveLaunchOptions } from './launch-options.js';
import { copyLogTail } from './log-copy.js';
import { OutputTee } from './output.js';
import { checkOwnership, describeStranger, type Ownership } from './ownership.js';
import { tablePoller, type TablePoller } from './port-watch.js';
import { chooseProbeHost, hostPort, isLoopbackName, stripBrackets } from './probe-host.js';
import { preflight } from './preflight.js';
import { probeCmd, probeHttp, probeTcp, type ProbeResult } from './probes.js';
import { ProcessTree } from './process-tree.js';
import { checkReadyWithHandoff, formatReadySpec, parseReadySpec, substitutePort } from './ready-spec.js';
import { redactArgv, redactEnv, redactReadySpec } from './redact.js';
import { createRunDir, removeRunDir, type RunDir } from './run-dir.js';
import { childEnv, execPlan, findExecutable, substitute, type ExecPlan } from './spawn-plan.js';
import { guardRun, type RunGuard } from './watchdog.js';
import type { ExitInfo, Handoff, LaunchEvent, LaunchHandle, LaunchOptions, LaunchPhase, ReadyInfo, ReadySpec } from './types.js';

/** A launch that did not come up: exitCode 69/70/75 (or 64/74), with its bundle's folder. */
export class LaunchError extends BerthError {
  readonly phase: LaunchPhase;
  readonly runDir: string | undefined;
  constructor(exitCode: number, message: string, phase: LaunchPhase, runDir?: string, details?: Record<string, unknown>) {
    super(exitCode, message, details);
    this.name = 'LaunchError';
    this.phase = phase;
    this.runDir = runDir;
  }
}

const DEFAULT_READY_TIMEOUT_MS = 10 * 60_000;
const DEFAULT_PROBE_TIMEOUT_MS = 5_000;
const DEFAULT_STOP_GRACE_MS = 10_000;
/** Ownership polling: fast at first (most services bind within a second), then ~10/s; one read per tick serves every launch (port-watch.ts). */
const OWN_POLL_FIRST_MS = 2;
const OWN_POLL_MAX_MS = 100;
/** Probe interval backs off from 10 ms to 250 ms. */
const PROBE_FIRST_MS = 10;
const PROBE_MAX_MS = 250;
/** A same-uid listener we cannot see is "stolen" only after this many looks in a row. */
const INVISIBLE_CONFIRMATIONS = 3;
/** Child output triggers an early look at most this often. */
const KICK_GAP_MS = 10;
/** After the child exits, how long its pipes may stay open (held by descendants) before we move on. */
const DRAIN_MS = 500;
/** How often a daemonized tree (child exited 0, descendants live) is checked. */
const TREE_POLL_MS = 250;

const now = () => performance.now();
const iso = () => new Date().toISOString();

export function signalNumber(sig: NodeJS.Signals): number {
  return (osConstants.signals as Record<string, number>)[sig] ?? 0;
}

/** Shell-style status: the exit code, or 128+N for signal N. */
export function exitStatus(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return signal !== null ? 128 + signalNumber(signal) : 1;
}

function findPerl(env: NodeJS.ProcessEnv): string | undefined {
  return findExecutable('perl', env.PATH);
}

/** Start a service on a held port, wait until it owns the port and is ready, supervise it. */
export function launch(options: LaunchOptions): LaunchHandle {
  return new Launch(resolveLaunchOptions(options)).handle;
}

class Launch {
  readonly handle: LaunchHandle;
  private readonly o: LaunchOptions;
  private readonly name: string;
  private readonly handoff: Handoff;
  private readonly procRoot: string;
  /** No port: no reservation, no ownership phase (LaunchOptions.portless). */
  private readonly portless: boolean;
  /** Fill `{port}`/`{host}`/`{name}` into command and ready (LaunchOptions.substitute). */
  private readonly subst: boolean;
  private readonly runId = randomUUID();
  private readonly t0 = now();
  private readonly startedAt = iso();
  private readonly timings: Record<string, number> = {};
  private phase: LaunchPhase = 'reserve';
  private spec: ReadySpec | undefined;
  private runDir: RunDir | undefined;
  private reservation: Reservation | undefined;
  private port: number | undefined;
  private plan: ExecPlan | undefined;
  private env: NodeJS.ProcessEnv | undefined;
  private child: ChildProcess | undefined;
  private tree: ProcessTree | undefined;
  /** This launch as its watchdog knows it (stops the tree if berth dies). */
  private guard: RunGuard | undefined;
  private out: OutputTee | undefined;
  private err: OutputTee | undefined;
  private childExit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private childExited: Promise<void> | undefined;
  private lastOwnership: Ownership | undefined;
  private listening: SocketRow[] = [];
  private ownerPids: number[] = [];
  private probe = { attempts: 0, last: undefined as (ProbeResult & { host: string }) | undefined };
  private readyInfo: ReadyInfo | undefined;
  private failure: LaunchError | undefined;
  private stopReq: { signal: NodeJS.Signals } | undefined;
  private killTimer: NodeJS.Timeout | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private finishing = false;
  private bundlePath: string | undefined;
  /** The failure's message without the "diagnostics: …" note. */
  private reason: string | undefined;
  private warnings: string[] = [];
  /** Logs that are the caller's files (LaunchOptions.stdoutLog/stderrLog): copied into a bundle. */
  private readonly callerLogs = new Set<OutputTee>();
  /** Why a caller's log could not be copied into the bundle, by bundle file name. */
  private readonly copyErrors = new Map<string, string>();
  /** Wakes the current poll sleep early (exit, deadline, stop; output through kick()). */
  private wake: () => void = () => {};
  private lastPoll = 0;
  private kickTimer: NodeJS.Timeout | undefined;
  private readonly whenReady = deferred<ReadyInfo>();
  private readonly whenExited = deferred<ExitInfo>();

  constructor(o: LaunchOptions) {
    this.o = o;
    this.handoff = o.handoff ?? 'release';
    this.procRoot = o.procRoot ?? '/proc';
    this.portless = o.portless === true;
    this.subst = o.substitute !== false;
    this.name = o.name ?? (o.command[0] !== undefined ? basename(o.command[0]) : 'service');
    // Callers that only await `exited` must not crash on an unhandled rejection.
    this.whenReady.promise.catch(() => {});
    const self = this;
    this.handle = {
      name: this.name,
      ready: this.whenReady.promise,
      exited: this.whenExited.promise,
      get port() {
        return self.port;
      },
      get pid() {
        return self.child?.pid;
      },
      get phase() {
        return self.phase;
      },
      get runDir() {
        return self.runDir?.path ?? '';
      },
      signal: (sig) => this.signalTree(sig),
      stop: (opts) => this.stop(opts?.signal ?? 'SIGTERM', opts?.graceMs),
    };
    void this.main();
  }

  // ---- events and timings ---------------------------------------------------------------

  private emit(e: LaunchEvent): void {
    try {
      this.o.onEvent?.(e);
    } catch {
      // a faulty listener must not break supervision
    }
  }

  private mark(what: string): void {
    this.timings[what] = Math.round((now() - this.t0) * 10) / 10;
  }

  private warn(message: string): void {
    this.warnings.push(message);
    this.emit({ type: 'warning', message, t: iso() });
  }

  // ---- main sequence --------------------------------------------------------------------

  private async main(): Promise<void> {
    try {
      this.prepare();
      if (!this.portless) await this.reserve();
      if (this.stopReq) return void (await this.finish());
      // false: the spawn failed ('error' reports it) or a stop came first.
      if (!(await this.spawn()) || this.failure || this.stopReq) return;
      await this.waitReady();
    } catch (e) {
      const err = e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, `internal error: ${(e as Error)?.stack ?? String(e)}`);
      this.fail(err.exitCode, err.message, err.details);
    }
  }

  /** Everything that can be refused without touching a port. */
  private prepare(): void {
    const o = this.o;
    if (o.command.length === 0 || o.command[0] === '') throw new BerthError(EXIT.USAGE, 'no command to run: put it after --, e.g. berth run -- python3 -m http.server {port}');
    this.spec = typeof o.ready === 'string' ? parseReadySpec(o.ready) : o.ready;
    checkReadyWithHandoff(this.spec, this.handoff);
    // Without a source or reservation, reserve() takes the default band, as `berth run` does.
    if (this.portless) this.checkPortless();
    preflight(o); // cwd, program, argv size, bind, timers: before anything is leased
    const base = o.env ?? process.env;
    if (findExecutable(o.command[0]!, base.PATH, o.cwd) === undefined) {
      throw new BerthError(EXIT.USAGE, `command not found: ${o.command[0]} (not an executable file${o.command[0]!.includes('/') ? '' : ' in PATH'})`);
    }
    // The fd shim is perl (spawn-plan.ts); without it the service would get a non-blocking socket.
    if (this.handoff === 'fd' && findPerl(base) === undefined) {
      throw new BerthError(EXIT.USAGE, `${this.name}: fd handoff needs perl on PATH (it passes the socket as a blocking fd 3 and sets LISTEN_PID; Debian/Ubuntu: perl-base, RHEL-like: perl-interpreter): install perl, or use the release handoff`);
    }
    if (o.readyFile !== undefined) {
      try {
        rmSync(o.readyFile, { force: true }); // a waiter must not mistake the last run's file for this one
      } catch (e) {
        throw new BerthError(EXIT.IOERR, `cannot replace the ready file ${o.readyFile}: ${(e as Error).message}`);
      }
    }
    this.runDir = createRunDir({ name: this.name, env: base, ...(o.diagDir !== undefined ? { diagDir: o.diagDir } : {}), ...(o.stateDir !== undefined ? { stateDir: o.stateDir } : {}) });
    const kick = () => this.kick();
    this.out = this.openLog('stdout', o.stdoutLog, o.stdout === undefined ? process.stdout : o.stdout, kick);
    this.err = this.openLog('stderr', o.stderrLog, o.stderr === undefined ? process.stderr : o.stderr, kick);
    const timeout = o.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
    this.deadlineTimer = setTimeout(() => this.onDeadline(timeout), timeout);
  }

  /** What a launch without a port cannot do, refused before anything starts. */
  private checkPortless(): void {
    const o = this.o;
    const no = (what: string) => new BerthError(EXIT.USAGE, `${this.name}: a portless launch ${what}`);
    if (o.reservation || hasSourceOptions(o)) throw no('takes no port source or reservation');
    if (this.handoff === 'fd') throw no('has no socket to hand over (handoff fd)');
    if (this.spec?.kind === 'tcp') throw no('cannot use --ready tcp: there is no port to connect to; use cmd:COMMAND');
    if (this.subst) {
      const uses = (t: string) => t.includes('{port}');
      if (o.command.some(uses)) throw no('has no {port} to fill into the command');
      if (this.spec && uses(this.spec.kind === 'http' ? this.spec.url : this.spec.command)) throw no(`has no {port} to fill into the ready probe ${formatReadySpec(this.spec)}`);
    }
  }

  /** The run folder's <stream>.log, or the caller's file (appended to) when one is given. */
  private openLog(stream: 'stdout' | 'stderr', callerPath: string | undefined, through: NodeJS.WritableStream | null, kick: () => void): OutputTee {
    const path = callerPath ?? join(this.runDir!.path, `${stream}.log`);
    try {
      const tee = new OutputTee(path, through, kick, callerPath !== undefined);
      if (callerPath !== undefined) this.callerLogs.add(tee);
      return tee;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      throw new BerthError(EXIT.IOERR, `${this.name}: cannot open the ${stream} log ${path} (${code}); give a writable ${callerPath !== undefined ? 'log path' : '--diag-dir'}`, { path });
    }
  }

  private async reserve(): Promise<void> {
    this.phase = 'reserve';
    if (this.o.reservation) {
      this.reservation = this.o.reservation;
    } else {
      const ro: ReserveOptions = { ...pickSourceOptions(this.o), ownerPid: process.pid, name: this.name, procRoot: this.procRoot };
      if (this.o.allowEphemeral) ro.allowEphemeral = true;
      if (this.o.stateDir !== undefined) ro.stateDir = this.o.stateDir;
      // The hold becomes the service's socket: on the asked address, as {host} defaults.
      if (this.handoff === 'fd') ro.holdAddress = this.o.bind ?? '127.0.0.1';
      this.reservation = await reserve(ro);
    }
    const port = this.reservation.ports[0];
    if (port === undefined) throw new BerthError(EXIT.SOFTWARE, 'the reservation holds no port');
    this.port = port;
    this.mark('reservedMs');
    this.emit({ type: 'reserved', port, t: iso() });
  }

  private async spawn(): Promise<boolean> {
    this.phase = 'spawn';
    const o = this.o;
    const port = this.port;
    const base = o.env ?? process.env;
    const vars: Record<string, string> = { host: o.bind ?? '127.0.0.1', name: this.name };
    if (port !== undefined) vars.port = String(port);
    const command = this.subst ? o.command.map((a) => substitute(a, vars)) : [...o.command];
    const env = childEnv({ base, ...(port !== undefined ? { port } : {}), envName: o.envName ?? 'PORT', name: this.name, runId: this.runId, handoff: this.handoff, ...(o.bind !== undefined ? { bind: o.bind } : {}) });
    this.env = env;
    const plan = execPlan(command, this.handoff, this.handoff === 'fd' ? findPerl(base) : undefined);
    this.plan = plan;
    if (plan.warning) this.warn(plan.warning);
    // Listed before the release window opens: everything here predates the child.
    const existing = listPids(this.procRoot);
    let fd: number | undefined;
    if (port === undefined) {
      // portless: nothing is held, nothing to hand over
    } else if (this.handoff === 'fd') {
      fd = this.reservation!.holdFd(port);
      if (fd === undefined) throw new BerthError(EXIT.SOFTWARE, `fd handoff: berth holds no listening socket for port ${port} (the reservation was made without a hold, or already handed over)`);
    } else {
      // Release handoff: close the hold immediately before the spawn. The lease stays, so no
      // cooperating allocator takes the port; ownership is verified before any probe.
      await this.reservation!.unhold(port);
      if (this.stopReq) {
        await this.finish();
        return false;
      }
    }
    const marker = `BERTH_RUN_ID=${this.runId}`;
    // Before the spawn: a berth killed right after it still has its service found by the marker.
    this.guard = guardRun(this.runId, marker, this.o.stopGraceMs ?? DEFAULT_STOP_GRACE_MS);
    let child: ChildProcess;
    try {
      child = spawn(plan.file, plan.args, {
        env,
        ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
        // setsid(): its own session and process group, so signals reach the whole group and
        // a terminal's Ctrl-C reaches berth, which decides what to forward.
        detached: true,
        stdio: [o.stdin ?? 'ignore', 'pipe', 'pipe', ...(fd !== undefined ? [fd] : [])],
      });
    } finally {
      // fd handoff: berth's copy closes in the same tick, so berth never accepts a connection
      // meant for the service (the child's dup keeps the socket and its backlog alive).
      if (fd !== undefined) void this.reservation!.unhold(port!);
    }
    this.child = child;
    this.out!.attach(child.stdout);
    this.err!.attach(child.stderr);
    let resolveExit!: () => void;
    this.childExited = new Promise((r) => (resolveExit = r));
    child.on('exit', (code, signal) => {
      this.childExit = { code, signal };
      this.mark('childExitMs');
      resolveExit();
      this.onChildExit();
    });
    child.on('error', (e) => {
      // spawn failure (ENOENT, EACCES…): there is no process and 'exit' never comes.
      if (child.pid === undefined && !this.childExit) {
        this.childExit = { code: null, signal: null };
        resolveExit();
        this.fail(EXIT.SOFTWARE, `${this.name}: cannot start ${plan.command[0]}: ${(e as NodeJS.ErrnoException).code ?? e.message}`);
      }
    });
    if (child.pid === undefined) return false; // 'error' follows
    const guard = this.guard;
    const group = child.pid;
    this.tree = new ProcessTree(this.procRoot, group, marker, existing, {
      onJoin: (m) => {
        if (m.pgrp !== group) guard.member(m.pid, m.start);
      },
    });
    guard.spawned(group, this.tree.rootStart);
    this.mark('spawnedMs');
    this.emit({ type: 'spawned', pid: child.pid, port: port ?? 0, handoff: this.handoff, t: iso() });
    return true;
  }

  // ---- readiness --------------------------------------------------------------------------

  private get settled(): boolean {
    return this.failure !== undefined || this.stopReq !== undefined || this.readyInfo !== undefined || this.finishing;
  }

  /**
   * The service printed something: often "listening on …", so look again now rather than at
   * the next backed-off poll. At most one look per KICK_GAP_MS, so a chatty start-up does
   * not turn into a busy loop over /proc/net/tcp.
   */
  private kick(): void {
    if (this.kickTimer || this.settled) return;
    const wait = this.lastPoll + KICK_GAP_MS - now();
    if (wait <= 0) return this.wake();
    this.kickTimer = setTimeout(() => {
      this.kickTimer = undefined;
      this.wake();
    }, wait);
  }

  private sleep(ms: number): Promise<void> {
    this.lastPoll = now();
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.wake = done;
    });
  }

  /**
   * The port's rows from the shared poller's next read, due within `withinMs` (sooner when
   * another launch's look comes first). wake() (output, exit, stop, deadline) asks for it now.
   */
  private async look(poller: TablePoller, port: number, withinMs: number): Promise<SocketRow[]> {
    const look = poller.look(port, withinMs);
    this.wake = () => look.hurry();
    const rows = await look.rows;
    this.lastPoll = now();
    return rows;
  }

  private remainingMs(): number {
    return this.t0 + (this.o.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS) - now();
  }

  private async waitReady(): Promise<void> {
    if (this.portless) {
      // Nothing to own: spawned is started; the probe, when given, says ready.
      if (this.spec) {
        this.phase = 'probe';
        if (!(await this.probeUntilReady())) return;
      }
      return this.becomeReady();
    }
    const port = this.port!;
    if (this.handoff === 'release') {
      this.phase = 'ownership';
      const poller = tablePoller(this.procRoot);
      let interval = OWN_POLL_FIRST_MS;
      let within = 0; // the first look: now
      let invisible = 0;
      for (;;) {
        if (this.settled || this.failIfTreeGone()) return;
        const rows = await this.look(poller, port, within);
        if (this.settled) return;
        const own = checkOwnership(this.procRoot, port, this.tree!, rows);
        this.lastOwnership = own;
        if (own.state === 'owned') {
          this.listening = own.listening;
          this.ownerPids = own.ownerPids;
          break;
        }
        if (own.state === 'foreign') {
          const uid = process.getuid?.();
          const hidden = own.strangers.every((s) => s.owners.length === 0 && s.row.uid === uid);
          if (!hidden || ++invisible >= INVISIBLE_CONFIRMATIONS) return void this.failStolen(own);
        } else invisible = 0;
        // A service that died is reported by the exit handler; one still alive but silent keeps us polling.
        within = Math.min(interval, Math.max(1, this.remainingMs()));
        interval = Math.min(interval * 1.5, OWN_POLL_MAX_MS);
      }
    } else {
      // The inherited socket is the service's from the first instruction it runs.
      const own = checkOwnership(this.procRoot, port, this.tree!);
      this.lastOwnership = own;
      if (own.state !== 'waiting') this.listening = own.listening;
      this.ownerPids = own.state === 'owned' ? own.ownerPids : [this.child!.pid!];
    }
    this.mark('ownedMs');
    this.emit({ type: 'owned', pid: this.child!.pid!, port, owners: this.ownerPids, t: iso() });
    if (this.spec) {
      this.phase = 'probe';
      if (!(await this.probeUntilReady())) return;
    }
    this.becomeReady();
  }

  /** The address berth reaches the service on, from the spec or --bind and what it listens on. */
  private reachHost(requested: string | undefined): string {
    return chooseProbeHost(requested ?? this.o.bind, this.listening, this.handoff === 'fd');
  }

  private async probeUntilReady(): Promise<boolean> {
    const spec = this.spec!;
    const port = this.port;
    let attempt: (timeoutMs: number) => Promise<ProbeResult>;
    let host: string;
    if (spec.kind === 'http') {
      let url: URL;
      try {
        url = new URL(this.subst && port !== undefined ? substitutePort(spec.url, port) : spec.url);
      } catch {
        throw new BerthError(EXIT.USAGE, `${this.name}: the ready probe ${JSON.stringify(spec.url)} is not a valid URL (expected http://HOST:PORT/PATH)`);
      }
      const urlHost = stripBrackets(url.hostname);
      host = isLoopbackName(urlHost) || urlHost === '0.0.0.0' || urlHost === '::' ? this.reachHost(urlHost) : urlHost;
      const target = url.port === '' ? 80 : Number(url.port);
      const path = (url.pathname || '/') + url.search;
      attempt = (t) => probeHttp(host, target, path, url.host, t);
    } else if (spec.kind === 'tcp') {
      host = this.reachHost(undefined);
      attempt = (t) => probeTcp(host, port!, t);
    } else {
      host = this.reachHost(undefined);
      const command = this.subst ? substitute(spec.command, { ...(port !== undefined ? { port: String(port) } : {}), host, name: this.name }) : spec.command;
      attempt = (t) => probeCmd(command, this.env!, this.o.cwd, t);
    }
    let interval = PROBE_FIRST_MS;
    for (;;) {
      if (this.settled || this.failIfTreeGone()) return false;
      const left = this.remainingMs();
      if (left <= 0) return false; // the deadline timer reports it
      const full = this.o.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
      const budget = Math.max(1, Math.min(full, left));
      const r = await attempt(budget);
      this.probe.attempts++;
      // An attempt cut short by the deadline says nothing about the service: keep the one before.
      if (r.ok || !r.timedOut || budget === full || this.probe.last === undefined) this.probe.last = { ...r, host };
      if (this.settled) return false;
      if (r.ok) return true;
      await this.sleep(Math.min(interval, Math.max(1, this.remainingMs())));
      interval = Math.min(interval * 1.5, PROBE_MAX_MS);
    }
  }

  private becomeReady(): void {
    const port = this.port ?? 0;
    const childAlive = this.childExit === undefined;
    const pid = childAlive ? this.child!.pid! : (this.ownerPids[0] ?? this.child!.pid!);
    // A portless service is reached on nothing (a probe's host names some other service).
    const host = this.portless ? '' : (this.probe.last?.host ?? this.reachHost(undefined));
    this.mark('readyMs');
    const waitedMs = Math.round((this.timings.readyMs ?? 0) - (this.timings.spawnedMs ?? 0));
    const info: ReadyInfo = { name: this.name, host, port, pid, readyAt: iso(), waitedMs };
    if (this.o.readyFile !== undefined) {
      try {
        writeFileAtomic(this.o.readyFile, JSON.stringify(info, null, 2) + '\n', 0o644);
      } catch (e) {
        this.fail(EXIT.IOERR, `${this.name}: ready, but cannot write the ready file ${this.o.readyFile}: ${(e as Error).message}`);
        return;
      }
    }
    clearTimeout(this.deadlineTimer);
    this.readyInfo = info;
    this.phase = 'ready';
    this.emit({ type: 'ready', info, t: iso() });
    this.whenReady.resolve(info);
    // The child may have exited 0 already, leaving a daemon: supervise the tree.
    if (!childAlive) void this.followDaemon();
  }

  private onDeadline(timeoutMs: number): void {
    if (this.settled) return;
    const where =
      this.phase === 'ownership'
        ? `the service did not listen on port ${this.port}`
        : this.phase === 'probe'
          ? `the probe ${this.subst && this.port !== undefined ? substitutePort(formatReadySpec(this.spec!), this.port) : formatReadySpec(this.spec!)} did not succeed (last: ${this.probe.last?.detail ?? 'no attempt finished'}, ${this.probe.attempts} attempts)`
          : `berth was still in phase ${this.phase}`;
    this.fail(EXIT.TEMPFAIL, `${this.name}: not ready after ${(timeoutMs / 1000).toFixed(1)}s (--ready-timeout): ${where}`);
  }

  // ---- supervision ------------------------------------------------------------------------

  private failStolen(own: Extract<Ownership, { state: 'foreign' }>): void {
    const who = own.strangers.map(describeStranger).join('; ');
    this.fail(EXIT.UNAVAILABLE, `${this.name}: port ${this.port} was stolen before the service bound it: ${who}`, { strangers: own.strangers });
  }

  /** One more look when the service died before ready: a stranger on the port explains it. */
  private reportStolen(): boolean {
    if (!this.tree || this.port === undefined) return false;
    const own = checkOwnership(this.procRoot, this.port, this.tree);
    if (own.state !== 'foreign') return false;
    this.lastOwnership = own;
    this.failStolen(own);
    return true;
  }

  /** The child returned 0 to daemonize, and the daemon is gone too: it will never be ready. */
  private failIfTreeGone(): boolean {
    if (this.childExit === undefined || this.descendantsAlive()) return false;
    this.fail(EXIT.SOFTWARE, `${this.name}: the service exited (status ${exitStatus(this.childExit.code, this.childExit.signal)}) and left no running process before it was ready (phase ${this.phase})`);
    return true;
  }

  private descendantsAlive(): boolean {
    if (!this.tree) return false;
    this.tree.scan();
    return this.tree.alive().some((m) => m.pid !== this.tree!.rootPid);
  }

  private onChildExit(): void {
    this.wake();
    const { code, signal } = this.childExit!;
    if (this.failure || this.finishing) return; // the failure path is waiting for this exit
    if (this.stopReq) return void this.finish();
    if (code === 0 && this.descendantsAlive()) {
      // A daemonizing service: its parent returns 0 once the daemon is running.
      this.warn(`${this.name}: pid ${this.child!.pid} exited 0, leaving descendants; following them as the service`);
      if (this.readyInfo) void this.followDaemon();
      return;
    }
    if (!this.readyInfo) {
      // A service that died because a stranger took its port was robbed, not broken.
      if (this.handoff === 'release' && this.reportStolen()) return;
      const how = signal ? `was killed by ${signal}` : `exited with status ${code}`;
      this.fail(EXIT.SOFTWARE, `${this.name}: the service ${how} before it was ready (phase ${this.phase})`);
      return;
    }
    void this.finish();
  }

  /** After the child returned 0 leaving descendants: the service ends when the last of them does. */
  private async followDaemon(): Promise<void> {
    while (!this.finishing && !this.failure) {
      if (!this.descendantsAlive()) return void (await this.finish());
      await new Promise((r) => setTimeout(r, TREE_POLL_MS));
    }
  }

  /** Signal the child's process group and tree members that left it (setsid daemons). */
  private signalTree(sig: NodeJS.Signals): void {
    const pgid = this.child?.pid;
    if (pgid === undefined) return;
    try {
      process.kill(-pgid, sig);
    } catch {
      // group gone
    }
    if (!this.tree) return;
    this.tree.scan();
    for (const m of this.tree.alive()) {
      if (m.pgrp === pgid) continue;
      try {
        process.kill(m.pid, sig);
      } catch {
        // exited meanwhile
      }
    }
  }

  private childRunning(): boolean {
    return this.child?.pid !== undefined && this.childExit === undefined;
  }

  private stop(signal: NodeJS.Signals, graceMs?: number): Promise<ExitInfo> {
    if (this.finishing) return this.handle.exited;
    const first = this.stopReq === undefined;
    if (first && !this.failure) {
      this.stopReq = { signal };
      this.phase = 'stopping';
      this.emit({ type: 'stopping', signal, t: iso() });
    }
    this.signalTree(signal);
    if (first) this.armKill(graceMs);
    this.wake();
    // Not spawned yet: the main sequence sees stopReq after its current step. Spawned and
    // already exited (a daemon being followed): end now. Running: its exit ends the launch.
    if (this.childExit !== undefined && !this.failure) void this.finish();
    return this.handle.exited;
  }

  private armKill(graceMs?: number): void {
    if (this.killTimer) return;
    this.killTimer = setTimeout(() => this.signalTree('SIGKILL'), graceMs ?? this.o.stopGraceMs ?? DEFAULT_STOP_GRACE_MS);
  }

  /** Wait for the pipes to close, up to `ms` (descendants may hold them open). */
  private async drain(ms: number): Promise<void> {
    if (this.child === undefined) return; // nothing was started: no pipes to wait for
    const both = Promise.all([this.out?.closed, this.err?.closed]);
    let t: NodeJS.Timeout | undefined;
    await Promise.race([both, new Promise((r) => (t = setTimeout(r, ms)))]);
    clearTimeout(t);
  }

  /** Stop whatever is left of the tree: TERM, grace, KILL. */
  private async cleanupTree(): Promise<void> {
    if (this.child?.pid === undefined) return;
    const anyAlive = () => this.childRunning() || this.descendantsAlive();
    if (!anyAlive()) return;
    this.signalTree('SIGTERM');
    this.armKill();
    const grace = this.o.stopGraceMs ?? DEFAULT_STOP_GRACE_MS;
    const until = now() + grace + 2_000;
    while (anyAlive() && now() < until) await new Promise((r) => setTimeout(r, 20));
  }

  // ---- failure and the end -------------------------------------------------------------------

  private fail(exitCode: number, message: string, details?: Record<string, unknown>): void {
    if (this.failure || this.finishing || this.readyInfo) return;
    const failedPhase = this.phase;
    this.mark('failedMs');
    this.failure = new LaunchError(exitCode, message, failedPhase, this.runDir?.path, details);
    clearTimeout(this.deadlineTimer);
    this.wake();
    void this.failAsync(failedPhase, details);
  }

  private async failAsync(phase: LaunchPhase, details?: Record<string, unknown>): Promise<void> {
    const err = this.failure!;
    if (this.childExit) await this.drain(DRAIN_MS); // early death: the last bytes of its output first
    // The bundle comes before any cleanup: sockets, owners and tree as they were.
    let bundleNote = '';
    if (this.runDir) {
      try {
        this.bundlePath = this.saveBundle(this.runDir.path, phase, err, details);
        bundleNote = `\ndiagnostics: ${this.runDir.path} (diagnostics.json, stdout.log, stderr.log)`;
      } catch (e) {
        bundleNote = `\n(could not write diagnostics to ${this.runDir.path}: ${(e as Error).message})`;
      }
    }
    const final = new LaunchError(err.exitCode, err.message + bundleNote, phase, this.runDir?.path, err.details);
    this.reason = err.message;
    this.failure = final;
    this.emit({ type: 'failed', phase, exitCode: final.exitCode, message: final.message, ...(this.bundlePath ? { bundle: this.bundlePath } : {}), t: iso() });
    this.whenReady.reject(final);
    await this.finish();
  }

  /** Cleanup common to every ending: stop what is left, release the lease, settle `exited`. */
  private async finish(): Promise<void> {
    if (this.finishing) return;
    this.finishing = true;
    clearTimeout(this.deadlineTimer);
    this.wake();
    await this.cleanupTree();
    if (this.childExited && this.childRunning()) await this.childExited;
    this.guard?.ended();
    await this.drain(2_000);
    this.out?.closeLog();
    this.err?.closeLog();
    clearTimeout(this.killTimer);
    clearTimeout(this.kickTimer);
    try {
      // The lease lives until the service has ended (a caller's reservation is consumed too).
      await this.reservation?.release();
    } catch (e) {
      this.warn(`could not release the lease of port ${this.port}: ${(e as Error).message}`);
    }
    const code = this.childExit?.code ?? null;
    const signal = this.childExit?.signal ?? null;
    let exitCode: number;
    if (this.failure) exitCode = this.failure.exitCode;
    // Stopped before it was ready (before the spawn, or while berth waited for it): the
    // signal's status, as `berth up` gives, whatever the half-started service exited with.
    else if (this.stopReq && !this.readyInfo) exitCode = 128 + signalNumber(this.stopReq.signal);
    else exitCode = exitStatus(code, signal);
    if (!this.readyInfo && !this.failure) {
      this.whenReady.reject(new LaunchError(exitCode, `${this.name}: stopped (${this.stopReq?.signal ?? 'stop'}) before it was ready`, this.phase, this.runDir?.path));
    }
    // A ready service that died on its own (not asked to stop) leaves evidence too.
    const unasked = this.readyInfo !== undefined && !this.stopReq && !this.failure && exitCode !== 0;
    if (this.runDir && unasked) {
      try {
        const how = signal ? `was killed by ${signal}` : `exited with status ${code}`;
        this.bundlePath = this.saveBundle(this.runDir.path, 'exited', new BerthError(exitCode, `${this.name}: the service ${how} after it was ready`));
      } catch {
        // best effort
      }
    } else if (this.runDir && this.failure && this.bundlePath) {
      try {
        // Add how the cleanup ended (the child's final status) to the bundle written before it.
        this.saveBundle(this.runDir.path, this.failure.phase, this.failure, this.failure.details);
      } catch {
        // the first bundle stays
      }
    }
    const keep = this.failure !== undefined || unasked || !this.runDir?.owned;
    if (this.runDir && !keep) removeRunDir(this.runDir);
    this.phase = 'exited';
    this.emit({ type: 'exited', code, signal, exitCode, t: iso() });
    const info: ExitInfo = { exitCode, code, signal, ready: this.readyInfo !== undefined };
    if (this.failure) info.error = this.failure;
    if (this.runDir && keep) info.runDir = this.runDir.path;
    if (this.bundlePath) info.bundle = this.bundlePath;
    this.whenExited.resolve(info);
  }

  /**
   * diagnostics.json, and with the caller's log files, this launch's part of each copied in as
   * stdout.log/stderr.log (see log-copy.ts): the bundle is complete on its own. Called again
   * when the launch has ended, so the copies then hold the output of the cleanup too.
   */
  private saveBundle(dir: string, phase: LaunchPhase, err: BerthError, details?: Record<string, unknown>): string {
    for (const [tee, file] of [
      [this.out, 'stdout.log'],
      [this.err, 'stderr.log'],
    ] as const) {
      if (!tee || !this.callerLogs.has(tee)) continue;
      try {
        copyLogTail(tee.logPath, tee.startOffset, join(dir, file));
        this.copyErrors.delete(file);
      } catch (e) {
        this.copyErrors.set(file, (e as NodeJS.ErrnoException).code ?? (e as Error).message);
      }
    }
    return writeBundle(dir, this.bundle(phase, err, details));
  }

  private logEntry(tee: OutputTee | undefined, file: 'stdout.log' | 'stderr.log'): Record<string, unknown> {
    const entry: Record<string, unknown> = { file, bytes: tee?.bytes ?? 0 };
    if (tee?.logError) entry.error = tee.logError;
    if (tee && this.callerLogs.has(tee)) {
      // The live log is the caller's file; `file` is the copy of this launch's part of it.
      entry.log = tee.logPath;
      entry.offset = tee.startOffset;
      const copyError = this.copyErrors.get(file);
      if (copyError !== undefined) entry.copyError = copyError;
    }
    return entry;
  }

  private bundle(phase: LaunchPhase, err: BerthError, details?: Record<string, unknown>): Record<string, unknown> {
    const asked = this.o.source;
    const port = this.port ?? this.o.port ?? (typeof asked === 'object' && asked.kind === 'port' ? asked.port : undefined);
    const tree = this.tree;
    const alive = tree ? new Set(tree.alive().map((m) => m.pid)) : new Set<number>();
    return {
      berth: { version: 1, pid: process.pid, runId: this.runId },
      name: this.name,
      phase,
      reason: this.reason ?? err.message,
      exitCode: err.exitCode,
      port: port ?? null,
      portless: this.portless,
      handoff: this.handoff,
      ready: this.spec ? redactReadySpec(formatReadySpec(this.spec)) : null,
      command: redactArgv(this.o.command),
      exec: this.plan ? { file: this.plan.file, args: this.handoff === 'fd' ? ['<fd shim>', ...redactArgv(this.plan.command)] : redactArgv(this.plan.args) } : null,
      source: this.reservation?.report.source ?? this.o.source ?? null,
      allocation: this.reservation?.report ?? (details && 'excluded' in details ? details : null),
      errorDetails: details ?? null,
      lease: this.reservation?.leases[0] ?? null,
      host: snapshotHost(this.procRoot, port),
      ownership: this.lastOwnership ? { state: this.lastOwnership.state, ownerPids: this.ownerPids } : null,
      probe: { attempts: this.probe.attempts, last: this.probe.last ?? null },
      child: this.child
        ? {
            pid: this.child.pid ?? null,
            pgid: this.child.pid ?? null,
            exit: this.childExit ? { ...this.childExit, status: exitStatus(this.childExit.code, this.childExit.signal) } : null,
            tree: tree ? [...tree.members.values()].map((m) => ({ ...m, alive: alive.has(m.pid) })) : [],
          }
        : null,
      timings: { startedAt: this.startedAt, ...this.timings, bundleMs: Math.round(now() - this.t0) },
      logs: { stdout: this.logEntry(this.out, 'stdout.log'), stderr: this.logEntry(this.err, 'stderr.log') },
      warnings: this.warnings,
      env: redactEnv(this.env ?? this.o.env ?? process.env),
      cwd: this.o.cwd ?? process.cwd(),
    };
  }
}
