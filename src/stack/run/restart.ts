import { BerthError, EXIT } from '../../errors.js';
import { endAbandoned, firstLine, type Replica } from './replica.js';
import type { StackRun } from './stack-run.js';

/*
 * `restart: on-failure`: a replica that failed with a restartable class comes back after a
 * growing pause, up to restart_limit times, on the same ports (its leases kept, its singles
 * held again in the pause).
 */

/** Exit classes worth another attempt (a port lost, a crash, a slow start); usage and I/O errors repeat. */
export const RESTARTABLE: ReadonlySet<number> = new Set<number>([EXIT.UNAVAILABLE, EXIT.SOFTWARE, EXIT.TEMPFAIL]);
const RESTART_BACKOFF_MS = 250;
const RESTART_BACKOFF_MAX_MS = 5_000;

export function restartLeft(st: StackRun, rep: Replica, exitCode: number): boolean {
  const r = rep.svc.spec.restart;
  return !st.ending && r.policy === 'on-failure' && rep.restarts < r.limit && RESTARTABLE.has(exitCode);
}

/** The failure that ends the stack: which replica, why, where its diagnostics are. */
export function recordFailure(st: StackRun, rep: Replica, exitCode: number, reason: string, bundle: string | undefined): void {
  const d = rep.diag[rep.diag.length - 1];
  st.failure = {
    service: rep.svc.spec.name,
    replica: rep.index,
    exitCode,
    reason,
    logs: st.logsOf(rep),
    ...(d && bundle ? { diagnostics: d.dir, bundle } : {}),
  };
}

/** The pause, its ports held again, then 'restart-due' (or 'attempt-failed' when one is taken). */
export function restart(st: StackRun, rep: Replica, reason: string): void {
  rep.restarts++;
  const limit = rep.svc.spec.restart.limit;
  const delay = Math.min(RESTART_BACKOFF_MS * 2 ** (rep.restarts - 1), RESTART_BACKOFF_MAX_MS);
  const old = rep.runner;
  rep.attempt++;
  st.update(rep, { state: 'pending', detail: `restart ${rep.restarts} of ${limit} in ${delay}ms: ${reason}` });
  void (async () => {
    // The old attempt has let go of its sockets once it has fully ended.
    await old?.exited;
    if (st.ending) return endAbandoned(rep);
    // Its single ports held again at once, so nothing takes them during the pause; one that
    // someone holds now gets the pause to be let go (a client's brief bind), then it counts.
    let taken = await reholdSingles(rep);
    await st.sleep(delay);
    if (st.ending) return endAbandoned(rep);
    if (taken) taken = await reholdSingles(rep);
    if (taken) {
      const why = `restart: cannot come back on its ports: ${firstLine(taken.message)}`;
      st.update(rep, { state: 'failed', code: taken.exitCode, detail: why });
      st.next({ kind: 'attempt-failed', rep, exitCode: taken.exitCode, reason: why, ended: true });
      return;
    }
    st.next({ kind: 'restart-due', rep });
  })().catch((e) => st.internalError(e));
}

/**
 * A restart keeps its ports: dependents were given its address. The error (69, naming whoever
 * took a port meanwhile) when one cannot be held again: the replica fails rather than moving silently.
 */
export async function reholdSingles(rep: Replica): Promise<BerthError | undefined> {
  try {
    for (const r of rep.set?.reservations ?? []) if (!r.block) await r.rehold();
    return undefined;
  } catch (e) {
    return e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, String(e));
  }
}
