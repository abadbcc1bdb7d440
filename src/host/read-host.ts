import { readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { findSocketOwners } from './owners.js';
import { readSockets, type ReaderChoice } from './socket-reader.js';
import { readSysctls } from './sysctl.js';
import type { HostMap, PortRange, SocketRow } from './host-map.js';

export { readSocketTableText } from './read-tables.js';

export interface ReadHostOptions {
  /** Root of the proc filesystem; fixture trees in tests. Default '/proc'. */
  procRoot?: string;
  /**
   * Look up owning processes: true for every socket in the table, a set for only
   * those inodes. Off by default because it reads every process's fd directory.
   */
  owners?: boolean | ReadonlySet<number>;
  /**
   * Keep only sockets whose local port lies in these ranges (see ParseTcpOptions): for
   * callers that need a few ports of a big table, such as the allocator. `sockets` then
   * holds exactly the rows an unfiltered read would hold on those ports, and
   * `skippedLines` counts only lines whose local port could not be read or was in range.
   */
  localPorts?: readonly PortRange[];
  /** Only LISTEN sockets, and unconnected UDP ones (the kernel then walks only its listening hash: see socket-reader.ts). */
  listenOnly?: boolean;
  /**
   * Read the UDP tables too (default true): a UDP socket holds its port against a UDP bind, so
   * a port with one is not free for a service that also uses UDP, and inspect/doctor show it.
   */
  udp?: boolean;
  /**
   * Which reader: with a filter (localPorts or listenOnly) on a big table, sock_diag through
   * `ss`; else /proc (socket-reader.ts). Default: BERTH_SOCKET_READER, else 'auto'.
   */
  via?: ReaderChoice;
}

/** "net:[4026531833]" from the ns link; fixture trees may hold a regular file instead. */
export function readNetns(procRoot = '/proc'): string {
  const path = join(procRoot, 'self', 'ns', 'net');
  try {
    return readlinkSync(path);
  } catch {
    try {
      const text = readFileSync(path, 'latin1').trim();
      return text === '' ? 'unknown' : text;
    } catch {
      return 'unknown';
    }
  }
}

/** The host port map: sysctls, every TCP and UDP socket, and owners when asked. */
export function readHostMap(opts: ReadHostOptions = {}): HostMap {
  const procRoot = opts.procRoot ?? '/proc';
  const read = readSockets({
    procRoot,
    ...(opts.localPorts !== undefined ? { localPorts: opts.localPorts } : {}),
    ...(opts.listenOnly === true ? { listenOnly: true } : {}),
    udp: opts.udp !== false,
    ...(opts.via !== undefined ? { via: opts.via } : {}),
  });
  const sockets = read.rows;
  const map: HostMap = {
    ...readSysctls(procRoot),
    netns: readNetns(procRoot),
    sockets,
    skippedLines: read.skipped,
    ipv6: read.ipv6,
    via: read.via,
    readAt: new Date().toISOString(),
  };
  if (opts.owners !== undefined && opts.owners !== false) {
    let wanted: ReadonlySet<number>;
    if (opts.owners === true) {
      const all = new Set<number>();
      for (const r of sockets) if (r.inode !== 0) all.add(r.inode);
      wanted = all;
    } else {
      wanted = opts.owners;
    }
    map.owners = findSocketOwners(procRoot, wanted);
  }
  return map;
}

/** Rows whose local port is `port`, any protocol, family and state (each of them blocks a bind). */
export function socketsOnPort(map: Pick<HostMap, 'sockets'>, port: number): SocketRow[] {
  return map.sockets.filter((r) => r.localPort === port);
}

/**
 * Short text for who holds a row: "pid 1234 (python3) LISTEN",
 * "uid 1000, owner not visible", "TIME_WAIT (no owner: kernel-held)".
 */
export function describeOwner(map: Pick<HostMap, 'owners'>, row: SocketRow): string {
  // inode 0: no file refers to the socket any more (TIME_WAIT, orphaned FIN_WAIT...).
  if (row.inode === 0) return `${row.state} (no owner: kernel-held)`;
  const state = row.protocol === 'udp' ? `UDP ${udpStateName(row)}` : row.state;
  const owners = map.owners?.get(row.inode);
  if (owners && owners.length > 0) {
    const who = owners.map((o) => `pid ${o.pid} (${o.comm || '?'})`).join(', ');
    return `${who} ${state}`;
  }
  const udp = row.protocol === 'udp' ? `${state}, ` : '';
  if (map.owners === undefined) return `${udp}uid ${row.uid}, owner not looked up`;
  return `${udp}uid ${row.uid}, owner not visible`;
}

/** A UDP row's state as `ss` names it: UNCONN (bound, receiving from anyone) or ESTAB (connected). */
export function udpStateName(row: Pick<SocketRow, 'state'>): string {
  return row.state === 'ESTABLISHED' ? 'ESTAB' : 'UNCONN';
}
