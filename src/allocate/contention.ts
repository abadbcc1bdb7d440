import type { AllocationReport } from './allocation-types.js';

/*
 * Contention is not exhaustion. When an allocation fails because of competitors that are
 * about to go away (another allocator still building its set, a hold about to be closed, a
 * socket closed since the table was read, a race lost a moment ago, a committed lease
 * whose owner is gone: its holder's `tail --pid` sees that within 0.2 s and ends it), the
 * allocation is retried from scratch, after giving everything back, for a bounded time. A
 * committed lease whose owner lives (or that has none: its holder lives, leases cannot be
 * stale), a stranger's listener or TIME_WAIT (a minute) are not transient: they fail at
 * once. Pure.
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

/**
 * Jittered exponential backoff within a time budget: each call gives the next wait in ms,
 * or undefined once the budget would be exceeded. The jitter (0.5x to 1.5x) keeps
 * allocators that failed together from retrying together.
 */
export function backoff(budgetMs: number, rng: () => number = Math.random, now: () => number = Date.now): () => number | undefined {
  const start = now();
  let base = 20;
  return () => {
    const wait = Math.round(base * (0.5 + rng()));
    base = Math.min(base * 2, 250);
    return now() - start + wait > budgetMs ? undefined : wait;
  };
}
