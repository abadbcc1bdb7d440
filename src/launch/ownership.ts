import { findSocketOwners, socketsHeldBy } from '../host/owners.js';
import { forgetTurn } from '../host/proc-turn.js';
import { readSockets, readSocketsAsync } from '../host/socket-reader.js';
import type { SocketOwner, SocketRow } from '../host/host-map.js';
import type { ProcessTree } from './process-tree.js';
import { commandText } from './foreign.js';

/*
 * "Who owns the listener on P?", asked many times a second while a service starts, so the common
 * answers are cheap: only the port's listeners are read, and only tree members' fds, once a
 * listener exists. Only one still unheld after a fresh listing of /proc (a stranger: the rare,
 * stolen case) costs a walk of every process's fds, to name it.
 */

/** Every socket, v4 and v6, any state, whose local port is `port` (filtered by the kernel on a big table). */
export function readPortRows(procRoot: string, port: number): SocketRow[] {
  return readSockets({ procRoot, localPorts: [{ lo: port, hi: port }] }).rows;
}

/** The LISTEN sockets on `port`, all that ownership is decided by (a big table's `ss` runs as a child the event loop does not wait on). */
export async function readPortListenersAsync(procRoot: string, port: number): Promise<SocketRow[]> {
  return (await readSocketsAsync({ procRoot, localPorts: [{ lo: port, hi: port }], listenOnly: true })).rows;
}

function readPortListeners(procRoot: string, port: number): SocketRow[] {
  return readSockets({ procRoot, localPorts: [{ lo: port, hi: port }], listenOnly: true }).rows;
}

export interface Stranger {
  row: SocketRow;
  /** Holders found under /proc (empty: not visible to us, e.g. another user's process). */
  owners: SocketOwner[];
}

export type Ownership =
  /** No LISTEN socket on the port yet. */
  | { state: 'waiting'; rows: SocketRow[] }
  /** The tree holds every LISTEN socket on the port. */
  | { state: 'owned'; rows: SocketRow[]; listening: SocketRow[]; ownerPids: number[] }
  /** A LISTEN socket on the port is held by someone else (or by nobody we can see). */
  | { state: 'foreign'; rows: SocketRow[]; listening: SocketRow[]; strangers: Stranger[] };

/**
 * One look at the port. `rows`: its LISTEN rows from a fresh read (the shared poller's), else read
 * here. A listener whose holder cannot be seen is foreign with no owners; when its uid is ours
 * the caller should look again before calling it stolen (a process between fork and exit, or
 * closing the socket, can hide for a moment).
 */
export function checkOwnership(procRoot: string, port: number, tree: ProcessTree, rows: SocketRow[] = readPortListeners(procRoot, port)): Ownership {
  const listening = rows.filter((r) => r.state === 'LISTEN' && r.inode !== 0);
  if (listening.length === 0) return { state: 'waiting', rows };
  tree.scan();
  const wanted = new Set(listening.map((r) => r.inode));
  const held = new Set<number>();
  const ownerPids: number[] = [];
  const look = (members: readonly { pid: number }[]) => {
    for (const m of members) {
      if (ownerPids.includes(m.pid)) continue;
      const got = socketsHeldBy(procRoot, m.pid, wanted);
      if (got.size > 0) ownerPids.push(m.pid);
      for (const inode of got) held.add(inode);
    }
  };
  look(tree.alive());
  if (listening.every((r) => held.has(r.inode))) return { state: 'owned', rows, listening, ownerPids };
  // The holder may be a member forked after this turn's listing of /proc: list again and look
  // at the new members only. The whole host's fds are read only to name a stranger.
  forgetTurn(procRoot);
  look(tree.scan());
  const unheld = listening.filter((r) => !held.has(r.inode));
  if (unheld.length === 0) return { state: 'owned', rows, listening, ownerPids };
  const owners = findSocketOwners(procRoot, new Set(unheld.map((r) => r.inode)));
  const strangers: Stranger[] = [];
  for (const row of unheld) {
    const list = owners.get(row.inode) ?? [];
    // A holder forked since the scan above is still the tree's.
    if (list.some((o) => tree.claims(o.pid))) {
      for (const o of list) if (tree.has(o.pid) && !ownerPids.includes(o.pid)) ownerPids.push(o.pid);
      continue;
    }
    strangers.push({ row, owners: list });
  }
  if (strangers.length === 0) return { state: 'owned', rows, listening, ownerPids };
  return { state: 'foreign', rows, listening, strangers };
}

/** "pid 4242 (python3 -m http.server 20000), uid 1000" or "uid 1001 (process not visible)". */
export function describeStranger(s: Stranger): string {
  const where = `${s.row.family === 6 ? `[${s.row.localAddress}]` : s.row.localAddress}:${s.row.localPort}`;
  if (s.owners.length === 0) return `a process of uid ${s.row.uid} (not visible to berth) listening on ${where}`;
  const who = s.owners.map((o) => `pid ${o.pid} (${commandText(o)})${o.uid !== undefined ? ` uid ${o.uid}` : ''}`).join(', ');
  return `${who} listening on ${where}`;
}
