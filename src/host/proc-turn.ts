import { join } from 'node:path';
import { listPids, tryRead } from './proc-read.js';

/*
 * /proc listed, and each stat read, at most once per turn of the event loop: a stack's launches
 * look at their process trees in one burst (the shared poller answers them all in one turn), and
 * N launches each listing /proc and reading every later sibling's stat made N listings and N²/2
 * reads. Only successful reads are kept (a pid missing now may be spawned later in the turn).
 */

interface Turn {
  pids: number[] | undefined;
  stats: Map<number, string>;
}

const turns = new Map<string, Turn>();

function turn(procRoot: string): Turn {
  let t = turns.get(procRoot);
  if (!t) {
    t = { pids: undefined, stats: new Map() };
    turns.set(procRoot, t);
    const mine = t;
    setImmediate(() => {
      if (turns.get(procRoot) === mine) turns.delete(procRoot);
    });
  }
  return t;
}

/** listPids(procRoot), listed at most once per turn. */
export function pidsThisTurn(procRoot = '/proc'): number[] {
  const t = turn(procRoot);
  return (t.pids ??= listPids(procRoot));
}

/** The text of /proc/<pid>/stat, read at most once per turn; undefined when it cannot be read. */
export function statThisTurn(pid: number, procRoot = '/proc'): string | undefined {
  const t = turn(procRoot);
  const hit = t.stats.get(pid);
  if (hit !== undefined) return hit;
  const text = tryRead(join(procRoot, String(pid), 'stat'), 'latin1');
  if (text !== undefined) t.stats.set(pid, text);
  return text;
}

/** Drop this turn's listing and stats of procRoot, for a caller that just learnt of a process (a socket holder not seen before). */
export function forgetTurn(procRoot = '/proc'): void {
  turns.delete(procRoot);
}
