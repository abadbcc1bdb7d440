import { portList, setPorts } from './audit.js';
import { now, type LaunchState } from './state.js';
import { soonListenSnapshot, treeListeners } from './tree-listeners.js';

/*
 * A service that listens, but not on its port, would be waited for its whole ready timeout. Once
 * the tree has listened elsewhere for ELSEWHERE_MS berth says so, once, naming the ports and the
 * fix; the wait goes on (the flag may be read late, or the port bound after the others).
 */

export const ELSEWHERE_MS = 3_000;
const LOOK_EVERY_MS = 1_000;

/** The line (pure): what the tree listens on instead, for how long, and what to do. */
export function elsewhereWarning(name: string, port: number, other: readonly number[], forMs: number, timeoutMs: number): string {
  const wait = timeoutMs >= 60_000 ? `${(timeoutMs / 60_000).toFixed(timeoutMs % 60_000 === 0 ? 0 : 1)}m` : `${(timeoutMs / 1000).toFixed(1)}s`;
  return `${name}: has listened on ${portList(other)} for ${(forMs / 1000).toFixed(0)}s, but not on its port ${port}, which berth waits for (up to its ` +
    `ready timeout, ${wait}): pass the port to it ({port} in its command, $PORT, or the program's flag for its port), or, if it picks its own port, ` +
      `declare it learned (port: learn)`;
}

/** Watch the tree during the ownership wait; the returned function ends the watch. */
export function watchElsewhere(s: LaunchState, timeoutMs: number): () => void {
  let since: number | undefined;
  let said = false;
  const timer = setInterval(() => {
    if (s.settled || said || !s.tree || s.port === undefined) return;
    soonListenSnapshot(s.procRoot, (snap) => {
      if (s.settled || said || s.phase !== 'ownership') return;
      const mine = setPorts([...s.assigned(), ...(s.o.sharedPorts ?? [])]);
      const outside = snap.listening.filter((r) => !mine.has(r.localPort));
      const other = [...new Set(treeListeners(s.procRoot, s.tree!, outside).map((l) => l.port))].sort((a, b) => a - b);
      if (other.length === 0) return void (since = undefined);
      since ??= now();
      const forMs = now() - since;
      if (forMs < ELSEWHERE_MS) return;
      said = true;
      s.warn(elsewhereWarning(s.name, s.port!, other, forMs, timeoutMs));
    });
  }, LOOK_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
