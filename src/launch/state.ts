import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { basename } from 'node:path';
import type { AssignedPorts } from '../allocate/port-set.js';
import type { NamedReservation } from '../allocate/reserve-named.js';
import type { Reservation } from '../allocate/allocation-types.js';
import { BerthError } from '../errors.js';
import type { SocketRow } from '../host/host-map.js';
import { deferred } from '../util/deferred.js';
import { phaseOf, settled, START, transition, type Life, type LifeEvent } from './lifecycle.js';
import type { OutputTee } from './output.js';
import type { Ownership } from './ownership.js';
import type { TablePoller } from './port-watch.js';
import type { ProbeResult } from './probes.js';
import type { ProcessTree } from './process-tree.js';
import type { RunDir } from './launch-run-dir.js';
import type { ExecPlan } from './spawn-plan.js';
import type { RunGuard } from './watchdog/index.js';
import type { AuditFinding, ExitInfo, ForeignListener, Handoff, LaunchEvent, LaunchOptions, LaunchPhase, ReadyInfo, ReadySpec } from './launch-api.js';

/*
 * Everything one launch knows, shared by its phases (launch.ts lists them). Which state it is
 * in is `life` (lifecycle.ts); the rest is data, and what every phase needs: events, timings,
 * warnings, and the one wake-up every wait of the launch listens to.
 */

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

export const DEFAULT_READY_TIMEOUT_MS = 10 * 60_000;
export const DEFAULT_STOP_GRACE_MS = 10_000;
/** Child output triggers an early look at most this often. */
const KICK_GAP_MS = 10;

export const now = () => performance.now();
export const iso = () => new Date().toISOString();

export class LaunchState {
  readonly o: LaunchOptions;
  readonly name: string;
  readonly handoff: Handoff;
  readonly procRoot: string;
  /** No port: no reservation, no ownership phase (LaunchOptions.portless). */
  readonly portless: boolean;
  /** Fill `{port}`/`{host}`/`{name}` into command and ready (LaunchOptions.substitute). */
  readonly subst: boolean;
  readonly runId = randomUUID();
  readonly t0 = now();
  readonly startedAt = iso();
  readonly timings: Record<string, number> = {};
  /** Which state the launch is in (lifecycle.ts); moved only by happen(). */
  life: Life = START;
  spec: ReadySpec | undefined;
  runDir: RunDir | undefined;
  /** The primary port's reservation (the set's first entry when there is a set). */
  reservation: Reservation | undefined;
  port: number | undefined;
  /** The named set (LaunchOptions.ports/portSet), undefined for a one-port launch. */
  set: NamedReservation | undefined;
  /** The primary port is learned (LaunchOptions.learn): undefined until then, nothing reserved for it. */
  readonly learnPrimary: boolean;
  /** Ports learned so far (learn-phase.ts), in LaunchOptions.learn order, and their leases. */
  learned: AssignedPorts[] = [];
  readonly learnedLeases: Reservation[] = [];
  /** Per learned entry with a pattern: the ports its lines gave, with the lines (at most MAX_MATCHES). */
  readonly learnMatches = new Map<string, { port: number; line: string }[]>();
  /** What the learn phase last waited for, and the tree's listeners then (the deadline's message). */
  learnWaiting: string | undefined;
  learnListeners: { port: number; address: string; pid?: number }[] = [];
  /** Listeners outside the set reported so far (each port once), and the ports they are on. */
  readonly findings: AuditFinding[] = [];
  readonly audited = new Set<number>();
  /** UDP ports reported so far: a UDP socket and a TCP listener on one port are two findings. */
  readonly auditedUdp = new Set<number>();
  /** Foreign listeners reported so far (each socket once, by inode). */
  readonly foreign: ForeignListener[] = [];
  /** Listener inodes known to be the tree's, and known not to be (foreign-check.ts: steady state reads no fd). */
  readonly treeInodes = new Set<number>();
  readonly notTreeInodes = new Set<number>();
  /** Handed single ports (fd handoff) the tree was seen without: warned once each. */
  readonly lostHanded = new Set<number>();
  /** Ends the periodic audit (supervise.ts). */
  stopAudit: (() => void) | undefined;
  plan: ExecPlan | undefined;
  env: NodeJS.ProcessEnv | undefined;
  child: ChildProcess | undefined;
  tree: ProcessTree | undefined;
  /** The launch's cgroup (host/cgroup.ts), when berth could make one; removed when it ends. */
  cgroup: string | undefined;
  /** Why the tree is not tracked by a cgroup (shown in diagnostics). */
  cgroupWhy: string | undefined;
  /** This launch as its watchdog knows it (stops the tree if berth dies). */
  guard: RunGuard | undefined;
  out: OutputTee | undefined;
  err: OutputTee | undefined;
  childExit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  childExited: Promise<void> | undefined;
  lastOwnership: Ownership | undefined;
  listening: SocketRow[] = [];
  ownerPids: number[] = [];
  probe = { attempts: 0, last: undefined as (ProbeResult & { host: string }) | undefined };
  /** The failure's error (the state says whether it failed: lifecycle.ts failed()). */
  failure: LaunchError | undefined;
  /** Aborted by a stop: a reservation under way stops at its next port. */
  readonly reserveAbort = new AbortController();
  killTimer: NodeJS.Timeout | undefined;
  /** When the tree is sent SIGKILL (stop.ts armKill), set by the first stop. */
  killAt: number | undefined;
  /** Members sent SIGTERM by pid (tree-control.ts): a newcomer is sent one of its own. */
  readonly termed = new Set<number>();
  /** The tree was sent the stop's signal (a stop, or the cleanup's own SIGTERM). */
  termSent = false;
  deadlineTimer: NodeJS.Timeout | undefined;
  bundlePath: string | undefined;
  /** The failure's message without the "diagnostics: …" note. */
  reason: string | undefined;
  warnings: string[] = [];
  /** Files that could not be written while it ran (write-failed.ts), each once. */
  readonly writeFailed: { path: string; error: string }[] = [];
  /** Logs that are the caller's files (LaunchOptions.stdoutLog/stderrLog): copied into a bundle. */
  readonly callerLogs = new Set<OutputTee>();
  /** Why a caller's log could not be copied into the bundle, by bundle file name. */
  readonly copyErrors = new Map<string, string>();
  /** Wakes the current poll sleep early (exit, deadline, stop; output through kick()). */
  wake: () => void = () => {};
  lastPoll = 0;
  kickTimer: NodeJS.Timeout | undefined;
  readonly whenReady = deferred<ReadyInfo>();
  readonly whenExited = deferred<ExitInfo>();

  constructor(o: LaunchOptions) {
    this.o = o;
    this.handoff = o.handoff ?? 'release';
    this.procRoot = o.procRoot ?? '/proc';
    this.portless = o.portless === true;
    this.learnPrimary = (o.learn?.length ?? 0) > 0 && (o.learnPrimary === true || (!o.ports && !o.portSet && !o.reservation));
    this.subst = o.substitute !== false;
    this.name = o.name ?? (o.command[0] !== undefined ? basename(o.command[0]) : 'service');
    // Callers that only await `exited` must not crash on an unhandled rejection.
    this.whenReady.promise.catch(() => {});
  }

  /** The ports as assigned: the named set, or the one port as the implicit set {port}. */
  assigned(): AssignedPorts[] {
    if (this.set) return [...this.set.assigned, ...this.learned];
    if (this.learnPrimary) return this.learned;
    return this.port === undefined ? [] : [{ name: 'port', kind: 'single', ports: [this.port] }, ...this.learned];
  }

  emit(e: LaunchEvent): void {
    try {
      this.o.onEvent?.(e);
    } catch {
      // a faulty listener must not break supervision
    }
  }

  mark(what: string): void {
    this.timings[what] = Math.round((now() - this.t0) * 10) / 10;
  }

  warn(message: string): void {
    this.warnings.push(message);
    this.emit({ type: 'warning', message, t: iso() });
  }

  /** What happened, through the one transition; false: the state did not take it (lifecycle.ts's rules). */
  happen(e: LifeEvent): boolean {
    const next = transition(this.life, e);
    if (next === this.life) return false;
    this.life = next;
    return true;
  }

  get phase(): LaunchPhase {
    return phaseOf(this.life);
  }

  get settled(): boolean {
    return settled(this.life);
  }

  remainingMs(): number {
    return this.t0 + (this.o.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS) - now();
  }

  childRunning(): boolean {
    return this.child?.pid !== undefined && this.childExit === undefined;
  }

  /** Output often means "listening on …": look now, not at the next backed-off poll (a chatty start-up: once per KICK_GAP_MS). */
  kick(): void {
    if (this.kickTimer || this.settled) return;
    const wait = this.lastPoll + KICK_GAP_MS - now();
    if (wait <= 0) return this.wake();
    this.kickTimer = setTimeout(() => {
      this.kickTimer = undefined;
      this.wake();
    }, wait);
  }

  sleep(ms: number): Promise<void> {
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

  /** The port's rows from the shared poller's next read, due within `withinMs`; wake() asks for it now. */
  async look(poller: TablePoller, port: number, withinMs: number): Promise<SocketRow[]> {
    const look = poller.look(port, withinMs);
    this.wake = () => look.hurry();
    const rows = await look.rows;
    this.lastPoll = now();
    return rows;
  }
}
