import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { unreservedEphemeral } from '../host/intervals.js';
import { parseCmdline, socketsHeldBy } from '../host/owners.js';
import { readHostMap } from '../host/read-host.js';
import { readSocketsAsync } from '../host/socket-reader.js';
import { readSysctls } from '../host/sysctl.js';
import type { PortRange, SocketRow } from '../host/host-map.js';
import type { TreeListener } from './audit.js';
import type { ProcessTree } from './process-tree.js';
import { redactArgv } from '../util/redact.js';

/*
 * What the service's process tree listens on. One read of the socket tables (LISTEN rows
 * and unconnected UDP rows only are kept) serves every launch of this process per tick (watchListeners); each launch
 * then reads only its own tree members' fd links to find which of those sockets are its.
 */

export interface ListenSnapshot {
  /** TCP LISTEN sockets. */
  listening: SocketRow[];
  /** Unconnected UDP sockets (UDP's listeners: bound to receive from anyone), apart so that nothing TCP-only sees them. */
  udp: SocketRow[];
  /** ip_local_port_range less ip_local_reserved_ports, read with the tables. */
  ephemeral: PortRange[];
}

export function readListenSnapshot(procRoot: string): ListenSnapshot {
  // LISTEN only: on a big table the kernel then walks its listening hash alone.
  const map = readHostMap({ procRoot, listenOnly: true });
  return { ...split(map.sockets), ephemeral: unreservedEphemeral(map.ephemeral, map.reserved) };
}

/** readListenSnapshot with `ss` (a big table) run as a child the event loop does not wait on: the audit's ticks. */
export async function readListenSnapshotAsync(procRoot: string): Promise<ListenSnapshot> {
  const read = await readSocketsAsync({ procRoot, listenOnly: true, udp: true });
  const sys = readSysctls(procRoot);
  return { ...split(read.rows), ephemeral: unreservedEphemeral(sys.ephemeral, sys.reserved) };
}

function split(rows: readonly SocketRow[]): { listening: SocketRow[]; udp: SocketRow[] } {
  const listening: SocketRow[] = [];
  const udp: SocketRow[] = [];
  for (const r of rows) {
    if (r.inode === 0) continue;
    if (r.protocol === 'udp') {
      if (r.state === 'CLOSE') udp.push(r);
    } else if (r.state === 'LISTEN') listening.push(r);
  }
  return { listening, udp };
}

/** The command line of `pid` as warnings and endpoints.json show it: redacted, at most 200 characters. */
export function commandOf(procRoot: string, pid: number): string | undefined {
  try {
    const argv = parseCmdline(readFileSync(join(procRoot, String(pid), 'cmdline'), 'latin1'));
    const text = redactArgv(argv).join(' ');
    return text === '' ? undefined : text.length > 200 ? `${text.slice(0, 197)}...` : text;
  } catch {
    return undefined;
  }
}

/** The sockets of `listening` (LISTEN, or UDP ones) held by a live member of the tree. */
export function treeListeners(procRoot: string, tree: ProcessTree, listening: readonly SocketRow[]): TreeListener[] {
  if (listening.length === 0) return [];
  tree.scan();
  const wanted = new Set(listening.map((r) => r.inode));
  const holder = new Map<number, number>();
  for (const m of tree.alive()) for (const inode of socketsHeldBy(procRoot, m.pid, wanted)) if (!holder.has(inode)) holder.set(inode, m.pid);
  const out: TreeListener[] = [];
  const commands = new Map<number, string | undefined>();
  for (const r of listening) {
    const pid = holder.get(r.inode);
    if (pid === undefined) continue;
    if (!commands.has(pid)) commands.set(pid, commandOf(procRoot, pid));
    const l: TreeListener = { port: r.localPort, address: r.localAddress, pid, ...(r.protocol === 'udp' ? { protocol: 'udp' as const } : {}) };
    const command = commands.get(pid);
    if (command !== undefined) l.command = command;
    out.push(l);
  }
  return out;
}

/** Audit rhythm: every few seconds; one table read per tick for every launch of this process. */
export const AUDIT_INTERVAL_MS = 3_000;

interface Watch {
  subs: Set<(snap: ListenSnapshot) => void>;
  timer: NodeJS.Timeout;
}
const watches = new Map<string, Watch>();

/** Call `fn` with a fresh snapshot every AUDIT_INTERVAL_MS until the returned function is called. */
export function watchListeners(procRoot: string, fn: (snap: ListenSnapshot) => void): () => void {
  let w = watches.get(procRoot);
  if (!w) {
    const subs = new Set<(snap: ListenSnapshot) => void>();
    let reading = false;
    const timer = setInterval(() => {
      if (reading) return; // a read slower than the rhythm: skip this tick
      reading = true;
      readListenSnapshotAsync(procRoot).then(
        (snap) => {
          reading = false;
          for (const sub of [...subs]) sub(snap);
        },
        () => {
          reading = false; // an unreadable table this tick: the next one may do
        },
      );
    }, AUDIT_INTERVAL_MS);
    // The service keeps the process alive, never the audit.
    timer.unref();
    watches.set(procRoot, (w = { subs, timer }));
  }
  const watch = w;
  watch.subs.add(fn);
  return () => {
    watch.subs.delete(fn);
    if (watch.subs.size === 0) {
      clearInterval(watch.timer);
      watches.delete(procRoot);
    }
  };
}

const soon = new Map<string, Set<(snap: ListenSnapshot) => void>>();
/** Within this long of the first asker, one read serves every launch that became ready meanwhile. */
export const SOON_MS = 100;

/** `fn` gets one snapshot read within SOON_MS, shared with every other caller in that window. */
export function soonListenSnapshot(procRoot: string, fn: (snap: ListenSnapshot) => void): void {
  let subs = soon.get(procRoot);
  if (!subs) {
    const mine = (subs = new Set());
    soon.set(procRoot, mine);
    setTimeout(() => {
      soon.delete(procRoot);
      readListenSnapshotAsync(procRoot).then(
        (snap) => {
          for (const f of mine) f(snap);
        },
        () => {}, // the periodic audit may do
      );
    }, SOON_MS).unref();
  }
  subs.add(fn);
}

const inFlight = new Map<string, Promise<ListenSnapshot>>();

/** A snapshot read now, shared with every caller that asks while that read runs (the learn phase's fast polls). */
export function listenSnapshotNow(procRoot: string): Promise<ListenSnapshot> {
  let p = inFlight.get(procRoot);
  if (!p) {
    p = readListenSnapshotAsync(procRoot).finally(() => inFlight.delete(procRoot));
    inFlight.set(procRoot, p);
  }
  return p;
}
