import { reserve } from '../allocate/reserve.js';
import type { Reservation } from '../allocate/types.js';
import { BerthError, EXIT } from '../errors.js';
import { endReplica, firstLine, type Replica } from './replica.js';
import { reserveOptions } from './reserve-ports.js';
import type { StackRun } from './stack-run.js';
import { startAttempt } from './start-attempt.js';
import { beginTeardown, releaseReservation } from './teardown.js';

/*
 * `restart: on-failure`: a replica that failed with a restartable class (a port lost, a
 * crash, a slow start) comes back after a growing pause, up to restart_limit times; else
 * its failure fails the stack.
 */

/** Exit classes worth another attempt (a port lost, a crash, a slow start); usage and I/O errors repeat. */
const RESTARTABLE = new Set<number>([EXIT.UNAVAILABLE, EXIT.SOFTWARE, EXIT.TEMPFAIL]);
const RESTART_BACKOFF_MS = 250;
const RESTART_BACKOFF_MAX_MS = 5_000;

export function restartLeft(st: StackRun, rep: Replica, exitCode: number): boolean {
  const r = rep.svc.spec.restart;
  return !st.ending && r.policy === 'on-failure' && rep.restarts < r.limit && RESTARTABLE.has(exitCode);
}

export function replicaFailed(st: StackRun, rep: Replica, exitCode: number, reason: string, bundle: string | undefined): void {
  if (restartLeft(st, rep, exitCode)) {
    restart(st, rep, reason);
    return;
  }
  rep.final = true;
  if (st.ending) return;
  const d = rep.diag[rep.diag.length - 1];
  st.failure = {
    service: rep.svc.spec.name,
    replica: rep.index,
    exitCode,
    reason,
    logs: st.run.logFiles(rep.svc.spec.name, rep.index),
    ...(d && bundle ? { diagnostics: d.dir, bundle } : {}),
  };
  beginTeardown(st, 'failed');
}

export function restart(st: StackRun, rep: Replica, reason: string): void {
  rep.restarts++;
  const limit = rep.svc.spec.restart.limit;
  const delay = Math.min(RESTART_BACKOFF_MS * 2 ** (rep.restarts - 1), RESTART_BACKOFF_MAX_MS);
  const old = rep.runner;
  rep.attempt++;
  st.update(rep, { state: 'pending', detail: `restart ${rep.restarts} of ${limit} in ${delay}ms: ${reason}` });
  void (async () => {
    // The old attempt releases its lease when it has fully ended.
    await old?.exited;
    await st.sleep(delay);
    if (st.ending) return endAbandoned(rep);
    const before = rep.port;
    try {
      rep.reservation = await reserveAgain(st, rep);
    } catch (e) {
      const err = e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, String(e));
      st.update(rep, { state: 'failed', code: err.exitCode, detail: firstLine(err.message) });
      replicaFailed(st, rep, err.exitCode, `restart: no port: ${firstLine(err.message)}`, undefined);
      if (rep.final) endReplica(rep);
      return;
    }
    if (st.ending) {
      await releaseReservation(st, rep);
      return endAbandoned(rep);
    }
    if (rep.reservation) {
      rep.port = rep.reservation.ports[0];
      if (before !== undefined && rep.port !== before) {
        st.warn(`${rep.label} restarted on port ${rep.port} (port ${before} was no longer free); services started before with its old address keep it`);
      }
      st.update(rep, { state: 'pending', port: rep.port! });
    }
    startAttempt(st, rep);
  })().catch((e) => st.internalError(e));
}

/** Same port as before when it is still free (dependents know it), else any of its source. */
async function reserveAgain(st: StackRun, rep: Replica): Promise<Reservation | undefined> {
  if (!rep.source) return undefined;
  if (rep.port !== undefined) {
    try {
      return await reserve(reserveOptions(st, rep, { kind: 'port', port: rep.port }));
    } catch {
      // taken meanwhile: any port of the source
    }
  }
  return reserve(reserveOptions(st, rep, rep.source));
}

/** A replica waiting for its restart when the stack ended. */
export function endAbandoned(rep: Replica): void {
  rep.final = true;
  endReplica(rep);
}
