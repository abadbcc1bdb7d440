import type { AllocationReport } from './allocation-types.js';

/*
 * Contention is not exhaustion: an allocation that lost to competitors about to go away (a set in
 * progress, a hold about to close, a race, a lease whose owner is gone: its `tail --pid` ends it
 * within 0.2 s) is retried from scratch for a bounded time. A live lease, a stranger's listener or
 * a TIME_WAIT (a minute) fail at once. Pure.
 */

/** Why retrying may help, or undefined when every competitor is there to stay. */
export function transientCompetitor(report: AllocationReport): string | undefined {
  const x = report.excluded;
  const pending = x.leased.find((l) => l.kind === 'pending');
  const gone = x.leased.find((l) => l.ownerGone);
  if (gone) return `port ${gone.port}'s owner pid ${gone.pid ?? '?'} is gone (its holder is ending the lease)`;
  if (pending) return `port ${pending.port} is being allocated by pid ${pending.pid ?? '?'}`;
  const hold = x.inUse.find((u) => u.heldByBerth);
  if (hold) return `port ${hold.port} is held by berth pid ${hold.pid ?? '?'}`;
  const closed = x.inUse.find((u) => u.closedSince);
  if (closed) return `port ${closed.port} was closed just now`;
  const raced = x.raced[0];
  if (raced) return `port ${raced.port}: ${raced.reason}`;
  const bound = x.bindFailed.find((b) => b.code === 'EADDRINUSE');
  if (bound) return `port ${bound.port} was bound by another process just now`;
  return undefined;
}

/** The next wait in ms, or undefined past the budget; jittered 0.5x-1.5x so allocators that failed together do not retry together. */
export function backoff(budgetMs: number, rng: () => number = Math.random, now: () => number = Date.now): () => number | undefined {
  const start = now();
  let base = 20;
  return () => {
    const wait = Math.round(base * (0.5 + rng()));
    base = Math.min(base * 2, 250);
    return now() - start + wait > budgetMs ? undefined : wait;
  };
}
