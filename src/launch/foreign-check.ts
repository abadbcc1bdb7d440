import { EXIT } from '../errors.js';
import { findSocketOwners, socketsHeldBy } from '../host/owners.js';
import { forgetTurn } from '../host/proc-turn.js';
import type { SocketOwner, SocketRow } from '../host/host-map.js';
import { candidatePorts, checkedPorts, findForeign, foreignWarning } from './foreign.js';
import { iso, type LaunchState } from './state.js';
import { tablePoller } from './port-watch.js';
import { fail } from './stop.js';
import type { ForeignListener } from './launch-api.js';

/*
 * The foreign-listener check's I/O: which LISTEN sockets on the replica's ports are its tree's,
 * and who holds the others. An inode lives as long as its socket, so each is judged once: in the
 * steady state no fd is read at all; a new socket costs a look at the tree's fds, and only one the
 * tree does not hold a walk of every process's fds. At readiness it fails (69); on the audit's
 * turns it warns, or fails (70) with `strict`.
 */

/** The holders of inodes judged not the tree's, per launch (empty list: not visible). */
const holders = new WeakMap<LaunchState, Map<number, SocketOwner[]>>();
/** Same-uid sockets whose holder could not be seen, and how often: a process caught between fork and exit can hide for a moment. */
const hidden = new WeakMap<LaunchState, Map<number, number>>();
const HIDDEN_LOOKS = 2;
/** BERTH_FOREIGN_CHECK=off: no foreign check at all (for measuring what it costs, `npm run bench -- --only foreign`). */
const OFF = process.env.BERTH_FOREIGN_CHECK === 'off';

/** Judge the inodes of `rows` not judged before. */
function judge(s: LaunchState, rows: readonly SocketRow[]): void {
  const fresh = rows.filter((r) => !s.treeInodes.has(r.inode) && !s.notTreeInodes.has(r.inode));
  if (fresh.length === 0 || !s.tree) return;
  const wanted = new Set(fresh.map((r) => r.inode));
  const lookTree = () => {
    s.tree!.scan();
    for (const m of s.tree!.alive()) for (const inode of socketsHeldBy(s.procRoot, m.pid, wanted)) {
      s.treeInodes.add(inode);
      wanted.delete(inode);
    }
  };
  lookTree();
  if (wanted.size === 0) return;
  // A member forked after this turn's listing of /proc: list again before calling it foreign.
  forgetTurn(s.procRoot);
  lookTree();
  if (wanted.size === 0) return;
  const found = findSocketOwners(s.procRoot, wanted);
  const own = holders.get(s) ?? new Map<number, SocketOwner[]>();
  holders.set(s, own);
  const seenHidden = hidden.get(s) ?? new Map<number, number>();
  hidden.set(s, seenHidden);
  const uid = process.getuid?.();
  for (const r of fresh) {
    if (!wanted.has(r.inode)) continue;
    const list = found.get(r.inode) ?? [];
    if (list.some((o) => s.tree!.claims(o.pid))) {
      s.treeInodes.add(r.inode);
      continue;
    }
    if (list.length === 0 && r.uid === uid) {
      const n = (seenHidden.get(r.inode) ?? 0) + 1;
      seenHidden.set(r.inode, n);
      if (n < HIDDEN_LOOKS) continue;
    }
    s.notTreeInodes.add(r.inode);
    own.set(r.inode, list);
  }
}

/** Whether a same-uid socket with no visible holder waits for another look. */
function pendingHidden(s: LaunchState): boolean {
  const m = hidden.get(s);
  return m !== undefined && [...m.keys()].some((inode) => !s.notTreeInodes.has(inode) && !s.treeInodes.has(inode));
}

/** One look over `listening` (LISTEN rows, any ports): the foreign listeners on the checked ports not reported before. */
export function lookForeign(s: LaunchState, listening: readonly SocketRow[]): ForeignListener[] {
  if (OFF) return [];
  const own = s.assigned();
  const shared = s.o.sharedPorts ?? [];
  const cand = candidatePorts(own, shared);
  const rows = listening.filter((r) => r.state === 'LISTEN' && r.inode !== 0 && cand.has(r.localPort));
  // Forget sockets that are gone (an inode number may be reused by a later socket).
  const live = new Set(rows.map((r) => r.inode));
  for (const set of [s.treeInodes, s.notTreeInodes]) for (const inode of set) if (!live.has(inode)) set.delete(inode);
  judge(s, rows);
  const treeListens = new Set(rows.filter((r) => s.treeInodes.has(r.inode)).map((r) => r.localPort));
  const checked = checkedPorts(own, shared, treeListens);
  const onChecked = rows.filter((r) => checked.has(r.localPort) && (s.treeInodes.has(r.inode) || s.notTreeInodes.has(r.inode)));
  const reported = new Set(s.foreign.map((f) => f.inode));
  return findForeign({ rows: onChecked, treeInodes: s.treeInodes, owners: holders.get(s) ?? new Map() }).filter((f) => !reported.has(f.inode));
}

function record(s: LaunchState, found: ForeignListener[]): void {
  s.foreign.push(...found);
  s.emit({ type: 'foreign', listeners: found, t: iso() });
}

/**
 * The LISTEN rows of `ports` from the launches' shared read, begun after this call (port-watch.ts).
 * A read of its own per replica cost 256 whole-table reads at a 256-replica start, twice the rest of berth's CPU.
 */
async function listenersNow(s: LaunchState, ports: readonly number[]): Promise<SocketRow[]> {
  const poller = tablePoller(s.procRoot);
  const looks = ports.map((p) => poller.look(p, 0).rows);
  return (await Promise.all(looks)).flat();
}

/** At readiness: a foreign listener on any of its ports and the replica is not ready (69). false: the launch ended. */
export async function checkForeignAtReady(s: LaunchState): Promise<boolean> {
  const ports = [...candidatePorts(s.assigned(), s.o.sharedPorts ?? [])];
  if (ports.length === 0 || !s.tree) return true;
  for (let i = 0; i < HIDDEN_LOOKS + 1; i++) {
    // Asynchronous is safe: the launch is 'answered', so an exit meanwhile is a ready service's (supervise.ts).
    const rows = await listenersNow(s, ports);
    if (s.settled) return false;
    const found = lookForeign(s, rows);
    if (found.length > 0) {
      record(s, found);
      fail(s, EXIT.UNAVAILABLE, `${foreignWarning(s.name, found)}; not ready: stop that process or give the service other ports`, { foreign: found });
      return false;
    }
    if (!pendingHidden(s)) return true;
    await s.sleep(20);
  }
  return true;
}

/** On an audit turn after ready: warn once per socket, or fail the launch (70) when strict. */
export function foreignTurn(s: LaunchState, listening: readonly SocketRow[]): void {
  const found = lookForeign(s, listening);
  if (found.length === 0) return;
  record(s, found);
  const line = foreignWarning(s.name, found);
  if (s.o.strict) fail(s, EXIT.SOFTWARE, `${line}; failing the service (strict)`, { foreign: found }, true);
  else s.warn(`${line}; new connections to the port may reach it instead of the service (strict: true, or --strict, makes this a failure)`);
}
