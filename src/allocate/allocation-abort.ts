import { BerthError, EXIT } from '../errors.js';

/* How an allocation sees the caller's AbortSignal: between ports, and while it backs off. */

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * With a signal, one turn of the event loop, then its reason thrown if aborted. Leasing and binding
 * a port complete without a turn (the bind is synchronous, 'listening' comes on nextTick), so a
 * signal arriving meanwhile would only be seen after the whole set is committed.
 */
export async function abortPoint(signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return;
  await new Promise((resolve) => setImmediate(resolve));
  if (signal.aborted) throw aborted(signal);
}

export function aborted(signal: AbortSignal | undefined): unknown {
  const r: unknown = signal?.reason;
  return r instanceof Error ? r : new BerthError(EXIT.TEMPFAIL, 'allocation interrupted; nothing was leased');
}
