import { BerthError, EXIT } from '../errors.js';
import { removeCgroup } from '../host/cgroup.js';
import { saveBundle } from './bundle.js';
import { exitStatus, signalNumber } from './exit-status.js';
import { cleanedUp, failed, finishing, phaseOf } from './lifecycle.js';
import { removeRunDir } from './launch-run-dir.js';
import { DEFAULT_STOP_GRACE_MS, iso, LaunchError, now, type LaunchState } from './state.js';
import { descendantsAlive, signalTree, termNewcomers } from './tree-control.js';
import type { ExitInfo, LaunchPhase } from './launch-api.js';

/*
 * Every way a launch ends: a stop asked by the caller, a failure (bundle first, then
 * cleanup), or the service ending on its own; finish() is the cleanup all of them share.
 */

/** After the child exits, how long its pipes may stay open (held by descendants) before we move on. */
const DRAIN_MS = 500;

/** LaunchHandle.stop(): `signal` to the tree, SIGKILL after the grace; resolves with `exited`. */
export function stop(s: LaunchState, signal: NodeJS.Signals, graceMs?: number): Promise<ExitInfo> {
  if (finishing(s.life)) return s.whenExited.promise;
  if (s.happen({ kind: 'stop', signal })) s.emit({ type: 'stopping', signal, t: iso() });
  s.reserveAbort.abort();
  if (s.child?.pid !== undefined) s.termSent = true;
  signalTree(s, signal);
  armKill(s, graceMs); // once: the first stop's grace is the deadline
  s.wake();
  // Not spawned yet: the main sequence sees the stop after its current step. Spawned and
  // already exited (a daemon being followed): end now. Running: its exit ends the launch.
  if (s.childExit !== undefined && !failed(s.life)) void finish(s);
  return s.whenExited.promise;
}

/** After the kill deadline, how often what is left of the tree is sent SIGKILL again. */
const KILL_EVERY_MS = 50;
/** How long after the kill deadline berth keeps trying before it gives up (a process in state D ignores SIGKILL). */
const KILL_PATIENCE_MS = 2_000;

/**
 * The kill deadline, set by the first stop: SIGKILL to the tree then, and again every KILL_EVERY_MS while any of
 * it is found, since a member found only after the first one (forked just before, or seen late) would outlive berth.
 */
function armKill(s: LaunchState, graceMs?: number): void {
  if (s.killAt !== undefined) return;
  const grace = graceMs ?? s.o.stopGraceMs ?? DEFAULT_STOP_GRACE_MS;
  s.killAt = now() + grace;
  const tick = () => {
    signalTree(s, 'SIGKILL');
    if (s.child?.pid === undefined || cleanedUp(s.life)) return;
    if (s.childRunning() || descendantsAlive(s)) s.killTimer = setTimeout(tick, KILL_EVERY_MS);
  };
  s.killTimer = setTimeout(tick, grace);
}

/** Wait for the pipes to close, up to `ms` (descendants may hold them open). */
async function drain(s: LaunchState, ms: number): Promise<void> {
  if (s.child === undefined) return; // nothing was started: no pipes to wait for
  const both = Promise.all([s.out?.closed, s.err?.closed]);
  let t: NodeJS.Timeout | undefined;
  await Promise.race([both, new Promise((r) => (t = setTimeout(r, ms)))]);
  clearTimeout(t);
}

/** What is left of the tree: TERM, grace, KILL (armKill); a newcomer gets one TERM of its own (a second may mean "quit now"). */
async function cleanupTree(s: LaunchState): Promise<void> {
  if (s.child?.pid === undefined) return;
  const anyAlive = () => s.childRunning() || descendantsAlive(s);
  if (!anyAlive()) return;
  armKill(s);
  if (!s.termSent) {
    s.termSent = true;
    signalTree(s, 'SIGTERM');
  }
  while (anyAlive() && now() < s.killAt! + KILL_PATIENCE_MS) {
    if (now() < s.killAt!) termNewcomers(s);
    else signalTree(s, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The child returned 0 to daemonize, and the daemon is gone too: it will never be ready. */
export function failIfTreeGone(s: LaunchState): boolean {
  if (s.childExit === undefined || descendantsAlive(s)) return false;
  const hint = s.childExit.code === 0 && s.o.exitZeroHint ? `; ${s.o.exitZeroHint}` : '';
  fail(
    s,
    EXIT.SOFTWARE,
    `${s.name}: the service exited (status ${exitStatus(s.childExit.code, s.childExit.signal)}) and left no running process before it was ready (phase ` +
      `${s.phase})${hint}`,
  );
  return true;
}

/**
 * The launch failed before it was ready (the first failure wins): bundle, reject `ready`, clean
 * up. `afterReady`: a failure of a ready service that berth itself decides (a foreign listener
 * under `strict`): the same ending, its exit code instead of the service's status.
 */
export function fail(s: LaunchState, exitCode: number, message: string, details?: Record<string, unknown>, afterReady = false): void {
  const failedPhase = phaseOf(s.life);
  if (!s.happen({ kind: 'fail', exitCode, afterReady })) return;
  s.mark('failedMs');
  s.failure = new LaunchError(exitCode, message, failedPhase, s.runDir?.path, details);
  clearTimeout(s.deadlineTimer);
  s.wake();
  void failAsync(s, failedPhase, details);
}

async function failAsync(s: LaunchState, phase: LaunchPhase, details?: Record<string, unknown>): Promise<void> {
  const err = s.failure!;
  if (s.childExit) await drain(s, DRAIN_MS); // early death: the last bytes of its output first
  // The bundle comes before any cleanup: sockets, owners and tree as they were.
  let bundleNote = '';
  if (s.runDir) {
    try {
      s.bundlePath = saveBundle(s, s.runDir.path, phase, err, details);
      bundleNote = `\ndiagnostics: ${s.runDir.path} (diagnostics.json, stdout.log, stderr.log)`;
    } catch (e) {
      bundleNote = `\n(could not write diagnostics to ${s.runDir.path}: ${(e as Error).message})`;
    }
  }
  const final = new LaunchError(err.exitCode, err.message + bundleNote, phase, s.runDir?.path, err.details);
  s.reason = err.message;
  s.failure = final;
  s.emit({ type: 'failed', phase, exitCode: final.exitCode, message: final.message, ...(s.bundlePath ? { bundle: s.bundlePath } : {}), t: iso() });
  s.whenReady.reject(final);
  await finish(s);
}

/** Cleanup common to every ending: stop what is left, release the lease, settle `exited`. */
export async function finish(s: LaunchState): Promise<void> {
  if (!s.happen({ kind: 'finish' })) return;
  // How it ends (failed, stopped, ready before) is settled now: nothing is taken while finishing.
  const end = s.life;
  if (end.at !== 'ending') return;
  clearTimeout(s.deadlineTimer);
  s.wake();
  await cleanupTree(s);
  if (s.childExited && s.childRunning()) await s.childExited;
  // Empty now, unless something outlived its KILL (state D): then it stays, with it.
  if (s.cgroup !== undefined) removeCgroup(s.cgroup);
  // The watchdog closes its copies of the leases meanwhile; awaited below, with berth's own.
  const watchdogReleased = s.guard?.ended();
  await drain(s, 2_000);
  s.out?.closeLog();
  s.err?.closeLog();
  s.happen({ kind: 'cleaned' });
  clearTimeout(s.killTimer);
  clearTimeout(s.kickTimer);
  s.stopAudit?.();
  try {
    // The leases live until the service has ended (a caller's reservation is consumed too,
    // unless the caller keeps it for a restart: keepReservation).
    if (!s.o.keepReservation) await (s.set ?? s.reservation)?.release();
    // Learned ports are the launch's own, always: a restart may come back on others.
    await Promise.all(s.learnedLeases.map((r) => r.release()));
  } catch (e) {
    const what = s.set ? `leases of ports ${s.set.assigned.map((a) => a.ports.join(',')).join(',')}` : `lease of port ${s.port}`;
    s.warn(`could not release the ${what}: ${(e as Error).message}`);
  }
  // Before 'exited': once berth has seen its launches exit, no name of their leases is left in the namespace.
  await watchdogReleased;
  const code = s.childExit?.code ?? null;
  const signal = s.childExit?.signal ?? null;
  let exitCode: number;
  if (end.failed !== undefined) exitCode = end.failed;
  // Stopped before it was ready (before the spawn, or while berth waited for it): the
  // signal's status, as `berth up` gives, whatever the half-started service exited with.
  else if (end.stop && !end.ready) exitCode = 128 + signalNumber(end.stop);
  else exitCode = exitStatus(code, signal);
  if (!end.ready && end.failed === undefined) {
    s.whenReady.reject(new LaunchError(exitCode, `${s.name}: stopped (${end.stop ?? 'stop'}) before it was ready`, end.phase, s.runDir?.path));
  }
  // A ready service that died on its own (not asked to stop) leaves evidence too.
  const unasked = end.ready && !end.stop && end.failed === undefined && exitCode !== 0;
  if (s.runDir && unasked) {
    try {
      const how = signal ? `was killed by ${signal}` : `exited with status ${code}`;
      s.bundlePath = saveBundle(s, s.runDir.path, 'exited', new BerthError(exitCode, `${s.name}: the service ${how} after it was ready`));
    } catch {
      // best effort
    }
  } else if (s.runDir && end.failed !== undefined && s.failure && s.bundlePath) {
    try {
      // Add how the cleanup ended (the child's final status) to the bundle written before it.
      saveBundle(s, s.runDir.path, s.failure.phase, s.failure, s.failure.details);
    } catch {
      // the first bundle stays
    }
  }
  const keep = end.failed !== undefined || unasked || !s.runDir?.owned;
  if (s.runDir && !keep) removeRunDir(s.runDir);
  s.happen({ kind: 'ended' });
  s.emit({ type: 'exited', code, signal, exitCode, t: iso() });
  const info: ExitInfo = { exitCode, code, signal, ready: end.ready };
  if (s.failure) info.error = s.failure;
  if (s.runDir && keep) info.runDir = s.runDir.path;
  if (s.bundlePath) info.bundle = s.bundlePath;
  if (s.writeFailed.length > 0) info.writeFailed = [...s.writeFailed];
  s.whenExited.resolve(info);
}
