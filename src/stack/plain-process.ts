import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { BerthError, EXIT } from '../errors.js';
import { writeBundle } from '../launch/diagnostics.js';
import { exitStatus, LaunchError } from '../launch/launch.js';
import { OutputTee } from '../launch/output.js';
import { isLoopbackName, stripBrackets } from '../launch/probe-host.js';
import { probeCmd, probeHttp, type ProbeResult } from '../launch/probes.js';
import { formatReadySpec } from '../launch/ready-spec.js';
import { redactArgv, redactEnv } from '../launch/redact.js';
import { findExecutable } from '../launch/spawn-plan.js';
import type { ExitInfo, LaunchEvent, LaunchHandle, LaunchPhase, ReadyInfo, ReadySpec } from '../launch/types.js';

/*
 * A stack service without a port (typically the job: a client). launch() always leases a
 * port and waits for the service to own it, which a client never does, so such services
 * run here instead, with the same outward behaviour: own process group, output to
 * stdout.log/stderr.log in the diagnostics folder and through, an optional probe (http to
 * a fixed URL, or cmd:), TERM then KILL on stop, a diagnostics.json when it fails.
 * Without a probe it is ready once spawned. Events use launch's shapes with port 0.
 */

export interface PlainOptions {
  name: string;
  /** Argv, placeholders already resolved. No shell. */
  command: string[];
  /** The complete environment of the child. */
  env: NodeJS.ProcessEnv;
  cwd: string;
  ready?: ReadySpec;
  readyTimeoutMs?: number;
  probeTimeoutMs?: number;
  stopGraceMs?: number;
  /** Folder for stdout.log, stderr.log and diagnostics.json (created). */
  diagDir: string;
  stdout: NodeJS.WritableStream | null;
  stderr: NodeJS.WritableStream | null;
  onEvent?: (e: LaunchEvent) => void;
}

const DEFAULT_READY_TIMEOUT_MS = 10 * 60_000;
const DEFAULT_STOP_GRACE_MS = 10_000;
const PROBE_FIRST_MS = 10;
const PROBE_MAX_MS = 250;
const DRAIN_MS = 2_000;

const iso = () => new Date().toISOString();

export function runPlain(o: PlainOptions): LaunchHandle {
  return new PlainProcess(o).handle;
}

class PlainProcess {
  readonly handle: LaunchHandle;
  private phase: LaunchPhase = 'spawn';
  private child: ChildProcess | undefined;
  private childExit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private out: OutputTee | undefined;
  private err: OutputTee | undefined;
  private readyInfo: ReadyInfo | undefined;
  private failure: LaunchError | undefined;
  private stopSignal: NodeJS.Signals | undefined;
  private killTimer: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private finishing = false;
  private bundlePath: string | undefined;
  private probe = { attempts: 0, last: undefined as ProbeResult | undefined };
  private readonly t0 = performance.now();
  private readonly startedAt = iso();
  private spawnedMs: number | undefined;
  private wake: () => void = () => {};
  private resolveReady!: (r: ReadyInfo) => void;
  private rejectReady!: (e: Error) => void;
  private resolveExited!: (e: ExitInfo) => void;

  constructor(private readonly o: PlainOptions) {
    const ready = new Promise<ReadyInfo>((res, rej) => {
      this.resolveReady = res;
      this.rejectReady = rej;
    });
    ready.catch(() => {});
    const exited = new Promise<ExitInfo>((res) => (this.resolveExited = res));
    const self = this;
    this.handle = {
      name: o.name,
      ready,
      exited,
      get port() {
        return undefined;
      },
      get pid() {
        return self.child?.pid;
      },
      get phase() {
        return self.phase;
      },
      runDir: o.diagDir,
      signal: (sig) => this.signalGroup(sig),
      stop: (opts) => this.stop(opts?.signal ?? 'SIGTERM', opts?.graceMs),
    };
    try {
      this.start();
    } catch (e) {
      const err = e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, `internal error: ${(e as Error)?.stack ?? String(e)}`);
      // Report asynchronously, as launch() does: the caller has the handle first.
      queueMicrotask(() => this.fail(err.exitCode, err.message));
    }
  }

  private emit(e: LaunchEvent): void {
    try {
      this.o.onEvent?.(e);
    } catch {
      // a faulty listener must not break supervision
    }
  }

  private start(): void {
    const o = this.o;
    mkdirSync(o.diagDir, { recursive: true, mode: 0o700 });
    this.out = new OutputTee(join(o.diagDir, 'stdout.log'), o.stdout, () => this.wake());
    this.err = new OutputTee(join(o.diagDir, 'stderr.log'), o.stderr, () => this.wake());
    const cmd = o.command[0];
    if (cmd === undefined || cmd === '' || findExecutable(cmd, o.env.PATH, o.cwd) === undefined) {
      throw new BerthError(EXIT.USAGE, `${o.name}: command not found: ${cmd ?? '(none)'} (not an executable file${cmd?.includes('/') ? '' : ' in PATH'})`);
    }
    const timeout = o.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
    this.deadline = setTimeout(() => this.fail(EXIT.TEMPFAIL, `${o.name}: not ready after ${(timeout / 1000).toFixed(1)}s (ready_timeout): the probe ${o.ready ? formatReadySpec(o.ready) : ''} did not succeed (last: ${this.probe.last?.detail ?? 'no attempt finished'}, ${this.probe.attempts} attempts)`), timeout);
    const child = spawn(cmd, o.command.slice(1), { env: o.env, cwd: o.cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.out.attach(child.stdout);
    this.err.attach(child.stderr);
    child.on('exit', (code, signal) => {
      this.childExit = { code, signal };
      this.wake();
      this.onChildExit();
    });
    child.on('error', (e) => {
      if (child.pid === undefined && !this.childExit) {
        this.childExit = { code: null, signal: null };
        this.fail(EXIT.SOFTWARE, `${o.name}: cannot start ${cmd}: ${(e as NodeJS.ErrnoException).code ?? e.message}`);
      }
    });
    if (child.pid === undefined) return; // 'error' follows
    this.spawnedMs = performance.now();
    this.emit({ type: 'spawned', pid: child.pid, port: 0, handoff: 'release', t: iso() });
    if (!o.ready) this.becomeReady();
    else {
      this.phase = 'probe';
      void this.probeUntilReady(o.ready);
    }
  }

  private becomeReady(): void {
    clearTimeout(this.deadline);
    this.phase = 'ready';
    const info: ReadyInfo = { name: this.o.name, host: '', port: 0, pid: this.child!.pid!, readyAt: iso(), waitedMs: Math.round(performance.now() - (this.spawnedMs ?? this.t0)) };
    this.readyInfo = info;
    this.emit({ type: 'ready', info, t: iso() });
    this.resolveReady(info);
  }

  private get settled(): boolean {
    return this.readyInfo !== undefined || this.failure !== undefined || this.stopSignal !== undefined || this.finishing || this.childExit !== undefined;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.wake = done;
    });
  }

  private async probeUntilReady(spec: ReadySpec): Promise<void> {
    let attempt: (timeoutMs: number) => Promise<ProbeResult>;
    if (spec.kind === 'http') {
      const url = new URL(spec.url);
      const h = stripBrackets(url.hostname);
      const host = isLoopbackName(h) ? '127.0.0.1' : h;
      const port = url.port === '' ? 80 : Number(url.port);
      attempt = (t) => probeHttp(host, port, (url.pathname || '/') + url.search, url.host, t);
    } else if (spec.kind === 'cmd') {
      attempt = (t) => probeCmd(spec.command, this.o.env, this.o.cwd, t);
    } else {
      return void this.fail(EXIT.USAGE, `${this.o.name}: "ready: tcp" needs a port, and this service has none`);
    }
    let interval = PROBE_FIRST_MS;
    const deadlineAt = this.t0 + (this.o.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS);
    while (!this.settled) {
      const left = deadlineAt - performance.now();
      if (left <= 0) return;
      const r = await attempt(Math.max(1, Math.min(this.o.probeTimeoutMs ?? 5_000, left)));
      this.probe.attempts++;
      this.probe.last = r;
      if (this.settled) return;
      if (r.ok) return this.becomeReady();
      await this.sleep(Math.min(interval, Math.max(1, left)));
      interval = Math.min(interval * 1.5, PROBE_MAX_MS);
    }
  }

  private onChildExit(): void {
    if (this.failure || this.finishing) return;
    if (this.stopSignal || this.readyInfo) return void this.finish();
    const { code, signal } = this.childExit!;
    const how = signal ? `was killed by ${signal}` : `exited with status ${code}`;
    this.fail(EXIT.SOFTWARE, `${this.o.name}: the service ${how} before it was ready (phase ${this.phase})`);
  }

  private signalGroup(sig: NodeJS.Signals): void {
    const pid = this.child?.pid;
    if (pid === undefined || this.childExit) return;
    try {
      process.kill(-pid, sig);
    } catch {
      // gone
    }
  }

  private stop(signal: NodeJS.Signals, graceMs?: number): Promise<ExitInfo> {
    if (this.finishing) return this.handle.exited;
    const first = this.stopSignal === undefined;
    if (first && !this.failure) {
      this.stopSignal = signal;
      this.phase = 'stopping';
      this.emit({ type: 'stopping', signal, t: iso() });
    }
    this.signalGroup(signal);
    if (first) this.armKill(graceMs);
    this.wake();
    if (this.child?.pid === undefined || this.childExit) void this.finish();
    return this.handle.exited;
  }

  private armKill(graceMs?: number): void {
    if (this.killTimer) return;
    this.killTimer = setTimeout(() => this.signalGroup('SIGKILL'), graceMs ?? this.o.stopGraceMs ?? DEFAULT_STOP_GRACE_MS);
  }

  private fail(exitCode: number, message: string): void {
    if (this.failure || this.finishing || this.readyInfo) return;
    const phase = this.phase;
    clearTimeout(this.deadline);
    this.failure = new LaunchError(exitCode, message, phase, this.o.diagDir);
    this.wake();
    void this.failAsync(phase);
  }

  private async failAsync(phase: LaunchPhase): Promise<void> {
    if (this.childExit) await this.drain(500); // its last words first
    let note = '';
    try {
      this.bundlePath = writeBundle(this.o.diagDir, this.bundle(phase, this.failure!));
      note = `\ndiagnostics: ${this.o.diagDir} (diagnostics.json, stdout.log, stderr.log)`;
    } catch (e) {
      note = `\n(could not write diagnostics to ${this.o.diagDir}: ${(e as Error).message})`;
    }
    const base = this.failure!;
    this.failure = new LaunchError(base.exitCode, base.message + note, phase, this.o.diagDir);
    this.emit({ type: 'failed', phase, exitCode: base.exitCode, message: this.failure.message, ...(this.bundlePath ? { bundle: this.bundlePath } : {}), t: iso() });
    this.rejectReady(this.failure);
    await this.finish();
  }

  private async drain(ms: number): Promise<void> {
    if (!this.child) return;
    let t: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all([this.out?.closed, this.err?.closed]), new Promise((r) => (t = setTimeout(r, ms)))]);
    clearTimeout(t);
  }

  private async finish(): Promise<void> {
    if (this.finishing) return;
    this.finishing = true;
    clearTimeout(this.deadline);
    this.wake();
    if (this.child?.pid !== undefined && !this.childExit) {
      this.signalGroup('SIGTERM');
      this.armKill();
      await new Promise<void>((r) => this.child!.once('exit', () => r()));
    }
    await this.drain(DRAIN_MS);
    // The group may hold on after its leader (a backgrounded helper): it goes with the service.
    if (this.child?.pid !== undefined) {
      try {
        process.kill(-this.child.pid, 'SIGKILL');
      } catch {
        // group gone
      }
    }
    clearTimeout(this.killTimer);
    this.out?.closeLog();
    this.err?.closeLog();
    const code = this.childExit?.code ?? null;
    const signal = this.childExit?.signal ?? null;
    const exitCode = this.failure ? this.failure.exitCode : this.child?.pid !== undefined ? exitStatus(code, signal) : 143;
    if (!this.readyInfo && !this.failure) this.rejectReady(new LaunchError(exitCode, `${this.o.name}: stopped before it was ready`, this.phase, this.o.diagDir));
    const unasked = this.readyInfo !== undefined && this.stopSignal === undefined && !this.failure && exitCode !== 0;
    if (unasked) {
      try {
        const how = signal ? `was killed by ${signal}` : `exited with status ${code}`;
        this.bundlePath = writeBundle(this.o.diagDir, this.bundle('exited', new BerthError(exitCode, `${this.o.name}: the service ${how} after it was ready`)));
      } catch {
        // best effort
      }
    } else if (this.failure && this.bundlePath) {
      try {
        writeBundle(this.o.diagDir, this.bundle(this.failure.phase, this.failure));
      } catch {
        // the first bundle stays
      }
    }
    this.phase = 'exited';
    this.emit({ type: 'exited', code, signal, exitCode, t: iso() });
    const info: ExitInfo = { exitCode, code, signal, ready: this.readyInfo !== undefined, runDir: this.o.diagDir };
    if (this.failure) info.error = this.failure;
    if (this.bundlePath) info.bundle = this.bundlePath;
    this.resolveExited(info);
  }

  private bundle(phase: LaunchPhase, err: BerthError): Record<string, unknown> {
    return {
      berth: { version: 1, pid: process.pid },
      name: this.o.name,
      phase,
      reason: err.message.split('\ndiagnostics:')[0],
      exitCode: err.exitCode,
      port: null,
      ready: this.o.ready ? formatReadySpec(this.o.ready) : null,
      command: redactArgv(this.o.command),
      probe: { attempts: this.probe.attempts, last: this.probe.last ?? null },
      child: this.child
        ? { pid: this.child.pid ?? null, pgid: this.child.pid ?? null, exit: this.childExit ? { ...this.childExit, status: exitStatus(this.childExit.code, this.childExit.signal) } : null }
        : null,
      timings: { startedAt: this.startedAt, bundleMs: Math.round(performance.now() - this.t0) },
      logs: {
        stdout: { file: 'stdout.log', bytes: this.out?.bytes ?? 0 },
        stderr: { file: 'stderr.log', bytes: this.err?.bytes ?? 0 },
      },
      env: redactEnv(this.o.env),
      cwd: this.o.cwd,
    };
  }
}
