import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { listPids } from './pids.js';

/*
 * /proc as seen in this turn of the event loop, shared by every caller in the turn. A stack's
 * launches look at their process trees in bursts (the shared socket-table poller answers them
 * all in one turn), and each look listed /proc and read the stat of every process it had not
 * judged yet, which at stack start is every later sibling: N launches made N listings and
 * about N²/2 stat reads per burst. Here the listing is made once per turn and each stat read
 * once per turn. Only successful reads are kept (a pid that was not there may appear later in
 * the same turn: a spawn). forgetTurn() drops the cache, for a caller that needs a listing
 * made after something it just learnt (a socket holder not seen before).
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
  try {
    const text = readFileSync(join(procRoot, String(pid), 'stat'), 'latin1');
    t.stats.set(pid, text);
    return text;
  } catch {
    return undefined;
  }
}

/** Drop this turn's listing and stats of procRoot: the next call reads /proc again. */
export function forgetTurn(procRoot = '/proc'): void {
  turns.delete(procRoot);
}
