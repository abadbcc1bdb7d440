/*
 * `run`, `up` and `port` take SIGINT/SIGTERM/SIGHUP from their very start: one that comes before the
 * command's own handler (signals.ts; a scancel during start-up) would kill berth mid-start. It is
 * held here for that handler, an orderly stop (128+N). On a global symbol: main.ts and each
 * command's bundle have their own copy of this module.
 */

/** What `berth run` and `berth up` pass on to their services instead of dying at once. */
export const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const KEY = Symbol.for('berth.early-signals');

interface Early {
  first: NodeJS.Signals | undefined;
  hold: (sig: NodeJS.Signals) => void;
}

type Holder = { [KEY]?: Early };

export function armEarlySignals(): void {
  const g = globalThis as Holder;
  if (g[KEY]) return;
  const early: Early = {
    first: undefined,
    hold: (sig) => {
      early.first ??= sig;
    },
  };
  g[KEY] = early;
  for (const s of SIGNALS) process.on(s, early.hold);
}

/** The first signal held so far (undefined: none, or never armed); holding ends. */
export function takeEarlySignal(): NodeJS.Signals | undefined {
  const g = globalThis as Holder;
  const early = g[KEY];
  if (!early) return undefined;
  for (const s of SIGNALS) process.off(s, early.hold);
  delete g[KEY];
  return early.first;
}
