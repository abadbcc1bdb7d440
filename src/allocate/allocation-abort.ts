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
 * One turn of the event loop. Leasing and binding a port complete without one (the bind is
 * synchronous, 'listening' comes on nextTick), so a signal that arrives meanwhile would
 * only be seen after the whole set is committed; this lets the caller's handler abort first.
 */
export function signalsSeen(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export function aborted(signal: AbortSignal | undefined): unknown {
  const r: unknown = signal?.reason;
  return r instanceof Error ? r : new BerthError(EXIT.TEMPFAIL, 'allocation interrupted; nothing was leased');
}
