import { leaseListened } from '../allocate/lease-listened.js';
import type { AssignedPorts } from '../allocate/port-set.js';
import { EXIT } from '../errors.js';
import { inRanges } from '../host/intervals.js';
import { setPorts } from './audit.js';
import { compilePattern, learnFrom, LineSplitter, MAX_MATCHES, portOfLine } from './learn.js';
import { iso, type LaunchState } from './state.js';
import { fail, failIfTreeGone } from './stop.js';
import { listenSnapshotNow, treeListeners, type ListenSnapshot } from './tree-listeners.js';

/*
 * Phase 3b (LaunchOptions.learn): wait until the tree listens on the ports it chooses itself,
 * tell which is which (learn.ts), lease them (nothing was held: the service holds them), and
 * from then on they are the launch's ports like any other: probe, foreign check, audit,
 * ReadyInfo. Lines are matched from the spawn on (a program prints its port once, maybe
 * before the ownership of another port is through).
 */

/** Learn polling: fast at first (a learned port should be known within ~20 ms of listen()), then ~10/s; output wakes it. */
const LEARN_POLL_FIRST_MS = 2;
const LEARN_POLL_MAX_MS = 100;

/** Output chunk → matched ports, per stream; undefined when no entry has a pattern. */
export function learnLineWatcher(s: LaunchState): ((chunk: Buffer) => void) | undefined {
  const entries = (s.o.learn ?? []).flatMap((e) => {
    const re = e.pattern === undefined ? undefined : compilePattern(e.pattern);
    return re instanceof RegExp ? [{ name: e.name, re }] : [];
  });
  if (entries.length === 0) return undefined;
  const split = new LineSplitter((line) => {
    for (const e of entries) {
      const port = portOfLine(e.re, line);
      if (port === undefined) continue;
      const seen = s.learnMatches.get(e.name) ?? [];
      if (seen.length >= MAX_MATCHES) seen.shift();
      seen.push({ port, line: line.length > 200 ? `${line.slice(0, 197)}...` : line });
      s.learnMatches.set(e.name, seen);
    }
  });
  return (chunk) => {
    if (s.learned.length === 0) split.push(chunk);
  };
}

/** false: the launch ended meanwhile (failed, stopped, the deadline). */
export async function learnPorts(s: LaunchState): Promise<boolean> {
  s.happen({ kind: 'waiting', phase: 'learn' });
  const entries = s.o.learn!;
  const known = setPorts([...s.assigned(), ...(s.o.sharedPorts ?? [])]);
  let interval = LEARN_POLL_FIRST_MS;
  let saidAmbiguous = false;
  for (;;) {
    if (s.settled || failIfTreeGone(s)) return false;
    const snap = await listenSnapshotNow(s.procRoot);
    if (s.settled) return false;
    const listeners = treeListeners(s.procRoot, s.tree!, snap.listening);
    s.learnListeners = listeners;
    const matched = new Map([...s.learnMatches].map(([k, v]) => [k, v.map((m) => m.port)]));
    const r = learnFrom(entries, listeners, known, matched);
    if (r.state === 'learned') return commit(s, r.ports, snap, listeners);
    s.learnWaiting = r.why;
    if (r.ambiguous && !saidAmbiguous) {
      saidAmbiguous = true;
      s.warn(`${s.name}: port not learned yet: ${r.why}`);
    }
    await s.sleep(Math.min(interval, Math.max(1, s.remainingMs())));
    interval = Math.min(interval * 1.5, LEARN_POLL_MAX_MS);
  }
}

async function commit(
  s: LaunchState,
  ports: Map<string, number>,
  snap: ListenSnapshot,
  listeners: readonly { port: number; pid?: number }[],
): Promise<boolean> {
  const learned: AssignedPorts[] = [];
  for (const e of s.o.learn!) {
    const port = ports.get(e.name)!;
    const got = await leaseListened(port, `${s.name}/${e.name}`, s.procRoot);
    if ('leasedBy' in got) {
      const l = got.leasedBy;
      const who = l
        ? `${l.name !== undefined ? `"${l.name}", ` : ''}${l.pid !== undefined ? `pid ${l.pid}` : `made by pid ` +
          `${l.createdBy}`}${l.state === 'pending' ? ', a set still being allocated' : ''}`
        : 'a lease that ended as berth looked';
      fail(
        s,
        EXIT.UNAVAILABLE,
        `${s.name}: it chose port ${port} ("${e.name}") itself, but that port is leased to ${who}: two services would answer on it; give ` +
          `"${e.name}" a leased port instead of learn, or keep the program off that range`,
        { port, entry: e.name },
      );
      return false;
    }
    s.learnedLeases.push(got.reservation);
    learned.push({ name: e.name, kind: 'single', ports: [port] });
    if (s.settled) return false;
  }
  s.learned = learned;
  s.learnWaiting = undefined;
  const ephemeral = learned.map((a) => a.ports[0]!).filter((p) => inRanges(p, snap.ephemeral));
  if (s.learnPrimary) {
    const port = learned[0]!.ports[0]!;
    s.port = port;
    const inodes = new Set(snap.listening.filter((r) => r.localPort === port).map((r) => r.inode));
    s.listening = snap.listening.filter((r) => inodes.has(r.inode));
    s.ownerPids = [...new Set(listeners.filter((l) => l.port === port).flatMap((l) => (l.pid === undefined ? [] : [l.pid])))];
  }
  s.mark('learnedMs');
  s.emit({ type: 'learned', ports: learned, ephemeral, t: iso() });
  if (s.learnPrimary) s.emit({ type: 'owned', pid: s.child!.pid!, port: s.port!, owners: s.ownerPids, t: iso() });
  return true;
}

/** The deadline's words for the learn phase: what it waited for, what the tree listened on, what lines matched. */
export function learnDeadlineText(s: LaunchState): string {
  const listens = [...new Set(s.learnListeners.map((l) => l.port))].sort((a, b) => a - b);
  const lines = [...s.learnMatches].map(([name, ms]) => `"${name}" matched ${ms.length} line(s), the last: ${JSON.stringify(ms[ms.length - 1]!.line)}`);
  return `no learned port: ${s.learnWaiting ?? 'the tree listened on nothing'}; its tree listened on ` +
    `${listens.length > 0 ? listens.join(', ') : 'no port'}${lines.length > 0 ? `; ${lines.join('; ')}` : ''}`;
}
