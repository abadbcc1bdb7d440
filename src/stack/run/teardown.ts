import { readdirSync, rmdirSync, rmSync } from 'node:fs';
import { BerthError, EXIT } from '../../errors.js';
import { signalNumber } from '../../launch/launch.js';
import { teardownWaves } from '../file/graph.js';
import { releasePorts, releaseShared } from './release.js';
import { endAbandoned, endReplica, type Replica } from './replica.js';
import type { ReplicaState } from '../file/spec.js';
import type { StackRun } from './stack-run.js';
import type { StackResult } from './stack-handle.js';

/* The end of a stack: dependents first, then every lease back, the run directory made final and `done` resolved. */

const STARTED_STATES: ReadonlySet<ReplicaState> = new Set(['starting', 'owned', 'ready']);

export function stop(st: StackRun, signal: NodeJS.Signals | undefined, force: boolean, cause?: string): Promise<StackResult> {
  if (!st.ending) {
    st.endSignal = signal;
    st.endCause = cause;
    beginTeardown(st, signal ? 'signal' : 'stopped');
  }
  if (force) forceKill(st);
  return st.whenDone.promise;
}

function forceKill(st: StackRun): void {
  st.forced = true;
  for (const rep of st.replicas) {
    if (!rep.runner || rep.final) continue;
    rep.stopAsked = true;
    rep.runner.signal('SIGKILL');
    void rep.runner.stop({ signal: 'SIGKILL', graceMs: 0 });
  }
}

export function beginTeardown(st: StackRun, reason: StackResult['reason']): void {
  if (st.ending) return;
  st.ending = reason;
  // Findings still grouped for one line are said before the stack's end is.
  st.sharedStrays.flush();
  if (st.stackReadyMs === undefined) {
    const why =
      reason === 'failed' && st.failure
        ? `${st.failure.service}/${st.failure.replica} failed: ${st.failure.reason}`
        : `the stack ended (${reason}) before it was ready`;
    st.whenReady.reject(new BerthError(st.failure?.exitCode ?? EXIT.SOFTWARE, why));
  }
  st.wakeSleepers();
  st.reserveAbort.abort();
  void tearDown(st)
    .catch((e) => st.warn(`teardown: ${(e as Error)?.stack ?? String(e)}`))
    .then(() => finish(st));
}

/** Dependents first, latest started first; each wave only after the previous one has exited. */
async function tearDown(st: StackRun): Promise<void> {
  const why =
    st.ending === 'failed' && st.failure
      ? `stack stopping: ${st.failure.service}/${st.failure.replica} failed`
      : st.ending === 'job'
        ? st.job && st.job.status !== 0 && st.byName.get(st.job.service)!.replicas.length > 1
          ? `stack stopping: rank ${st.job.replica} of the job ${st.job.service} exited with status ${st.job.status}`
          : `stack stopping: the job ${st.job?.service ?? ''} exited`
        : st.ending === 'signal'
          ? `stack stopping: ${st.endCause ?? `berth got ${st.endSignal}`}`
          : 'stack stopping';
  for (const wave of teardownWaves(st.nodes, st.startedOrder)) {
    const reps = wave.flatMap((name) => st.byName.get(name)?.replicas ?? []);
    // A service running elsewhere (../multi-node/) is stopped by whoever runs it.
    const external = wave.filter((name) => !st.byName.has(name) && st.o.stopExternal);
    await Promise.all([...reps.map((rep) => stopReplica(st, rep, why)), ...external.map((name) => st.o.stopExternal!(name).catch(() => {}))]);
  }
  for (const rep of st.replicas) if (!rep.runner && !rep.final) endAbandoned(rep);
  await Promise.all(st.replicas.filter((r) => r.runner || r.final).map((r) => r.ended));
  // Nothing runs any more (a replica waiting for its restart has ended): every lease back.
  for (const rep of st.replicas) await releasePorts(st, rep);
  for (const svc of st.services) await releaseShared(st, svc);
}

async function stopReplica(st: StackRun, rep: Replica, why: string): Promise<void> {
  const runner = rep.runner;
  if (!runner) return; // never launched
  if (!rep.final && !rep.attemptFailed) {
    rep.stopAsked = true;
    // Launched but not spawned yet (still pending): launch() ends it before the spawn, with no 'stopping'.
    const started = STARTED_STATES.has(rep.state);
    if (started) st.update(rep, { state: 'stopping', detail: why });
    void runner.stop(started && st.forced ? { signal: 'SIGKILL', graceMs: 0 } : { signal: 'SIGTERM', graceMs: rep.svc.spec.stopGraceMs });
  }
  await runner.exited;
  // A rank of a job that restarts as a group that had completed stays open until the end.
  if (rep.final) endReplica(rep);
  await rep.ended;
}

function finish(st: StackRun): void {
  // Clean attempts leave no diagnostics folder; failed ones keep theirs (never deleted).
  for (const rep of st.replicas) {
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
  const diagRoot = `${st.run.path}/diagnostics`;
  try {
    if (readdirSync(diagRoot).length === 0) rmdirSync(diagRoot);
  } catch {
    // none made
  }
  try {
    st.run.writeEndpoints(undefined, true);
  } catch {
    // reported when it first failed
  }
  st.runGuard.ended();
  st.closed = true;
  st.run.close();
  st.console.close();
  const reason = st.ending!;
  let exitCode: number;
  if (reason === 'failed') exitCode = st.failure?.exitCode ?? EXIT.SOFTWARE;
  else if (reason === 'job') exitCode = st.job?.status ?? 0;
  else if (reason === 'signal') exitCode = 128 + signalNumber(st.endSignal ?? 'SIGTERM');
  else exitCode = 0;
  // A record that could not be written (a full disk) is no clean run: 74, unless it failed otherwise.
  if (exitCode === 0 && st.writeFailures.any) exitCode = st.writeFailures.exitCode;
  const result: StackResult = { exitCode, reason, runDir: st.run.path };
  if (st.endSignal) result.signal = st.endSignal;
  if (st.failure) result.failure = st.failure;
  if (st.job) result.job = st.job;
  if (st.stackReadyMs !== undefined) result.readyMs = Math.round(st.stackReadyMs);
  if (st.writeFailures.any) result.writeFailures = [...st.writeFailures.list];
  st.whenDone.resolve(result);
}
