import type { AssignedPorts } from '../allocate/port-set.js';
import type { SocketOwner, SocketRow } from '../host/host-map.js';
import { redactArgv } from '../util/redact.js';
import type { ForeignListener } from './launch-api.js';
import { setPorts } from './audit.js';

/*
 * Foreign listeners, pure: a LISTEN socket on a port of the replica held outside its tree. Linux
 * lets a second same-uid socket listen on exactly the address and port of another when both set
 * SO_REUSEPORT, and splits new connections between them; a listener on the other family's
 * loopback (service on 127.0.0.1:P, stranger on [::1]:P) takes every client that resolves
 * "localhost" the other way. The I/O is in foreign-check.ts.
 */

/**
 * The replica's ports to defend, given where its tree listens: its singles (learned ones too)
 * always, a port of a block or of a stack's shared ports only where the tree listens (the rest
 * of a block is the program's to use or not; a shared port is replica 0's alone).
 */
export function checkedPorts(own: readonly AssignedPorts[], shared: readonly AssignedPorts[], treeListens: ReadonlySet<number>): Set<number> {
  const out = new Set<number>();
  for (const a of own) for (const p of a.ports) if (a.kind === 'single' || treeListens.has(p)) out.add(p);
  for (const a of shared) for (const p of a.ports) if (treeListens.has(p)) out.add(p);
  return out;
}

/** Every port that could become a checked one: all of the set's and the shared ports. */
export function candidatePorts(own: readonly AssignedPorts[], shared: readonly AssignedPorts[]): Set<number> {
  return setPorts([...own, ...shared]);
}

/** A holder's command line as messages show it: redacted, at most 120 characters. */
export function commandText(o: SocketOwner): string {
  const cmd = o.cmdline.length > 0 ? redactArgv(o.cmdline).join(' ') : o.comm;
  return cmd.length > 120 ? `${cmd.slice(0, 117)}...` : cmd || '?';
}

/**
 * Whether a stranger's socket is in a SO_REUSEPORT group with one of the tree's: same family,
 * address and port, both LISTEN. The kernel allows that pair only with SO_REUSEPORT on both, so
 * the pair is the proof; no option of another process's socket has to be read.
 */
export function sharesReuseport(stranger: SocketRow, tree: readonly SocketRow[]): boolean {
  return tree.some(
    (t) =>
      t.family === stranger.family &&
      t.localPort === stranger.localPort &&
      t.localAddress === stranger.localAddress &&
      t.state === 'LISTEN' &&
      stranger.state === 'LISTEN',
  );
}

/** "pid 4242 (python3 srv.py) uid 1000 listening on 127.0.0.1:22000, sharing …" */
export function describeForeign(f: Omit<ForeignListener, 'message'>): string {
  const addr = f.family === 6 ? `[${f.address}]:${f.port}` : `${f.address}:${f.port}`;
  const who =
    f.pid !== undefined
      ? `pid ${f.pid} (${f.command ?? '?'}) uid ${f.uid}${f.pids.length > 1 ? ` (with pids ${f.pids.slice(1).join(', ')})` : ''}`
      : `a process of uid ${f.uid} (not visible to berth)`;
  const how = f.reuseport ? ', and shares the listener through SO_REUSEPORT: the kernel splits new connections between it and the service' : '';
  return `${who} listening on ${addr}${how}`;
}

export interface ForeignInput {
  /** LISTEN rows on the checked ports, the tree's and the others. */
  rows: readonly SocketRow[];
  /** Inodes the replica's tree holds. */
  treeInodes: ReadonlySet<number>;
  /** Holders of the other inodes, where visible (empty list: not visible). */
  owners: ReadonlyMap<number, readonly SocketOwner[]>;
}

/** One finding per foreign socket, lowest port first (the messages say what and where, not what to do). */
export function findForeign(i: ForeignInput): ForeignListener[] {
  const tree = i.rows.filter((r) => i.treeInodes.has(r.inode));
  const out: ForeignListener[] = [];
  for (const r of [...i.rows].sort((a, b) => a.localPort - b.localPort || a.family - b.family)) {
    if (i.treeInodes.has(r.inode)) continue;
    const owners = i.owners.get(r.inode) ?? [];
    const f: Omit<ForeignListener, 'message'> = {
      port: r.localPort,
      address: r.localAddress,
      family: r.family,
      uid: r.uid,
      inode: r.inode,
      pids: owners.map((o) => o.pid),
      reuseport: sharesReuseport(r, tree),
    };
    if (owners[0] !== undefined) {
      f.pid = owners[0].pid;
      f.command = commandText(owners[0]);
    }
    out.push({ ...f, message: describeForeign(f) });
  }
  return out;
}

/** The console's one line for the findings of one look: "engine/0: port 22000 has a foreign listener: …". */
export function foreignWarning(name: string, found: readonly ForeignListener[]): string {
  const ports = [...new Set(found.map((f) => f.port))];
  const which = ports.length === 1 ? `port ${ports[0]} has` : `ports ${ports.join(', ')} have`;
  const head = `${name}: ${which} ${found.length === 1 ? 'a listener' : 'listeners'} outside the service's process tree`;
  return `${head}: ${found.map((f) => f.message).join('; ')}`;
}
