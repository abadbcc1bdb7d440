import { readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { findSocketOwners } from './owners.js';
import { tryRead } from './proc-read.js';
import { readSockets, type ReaderChoice } from './socket-reader.js';
import { readSysctls } from './sysctl.js';
import type { HostMap, PortRange, SocketRow } from './host-map.js';

export interface ReadHostOptions {
  /** Root of the proc filesystem; fixture trees in tests. Default '/proc'. */
  procRoot?: string;
  /** Look up owning processes: true for every socket, a set for those inodes. Off by default: it reads every process's fd directory. */
  owners?: boolean | ReadonlySet<number>;
  /**
   * Keep only sockets whose local port lies in these ranges: exactly the rows an unfiltered read
   * holds on them; `skippedLines` then counts only lines whose port was unreadable or in range.
   */
  localPorts?: readonly PortRange[];
  /** Only LISTEN sockets, and unconnected UDP ones (the kernel then walks only its listening hash: see socket-reader.ts). */
  listenOnly?: boolean;
  /** Read the UDP tables too (default true): a UDP socket holds its port against a service that also uses UDP. */
  udp?: boolean;
  /** Which reader: `ss` (sock_diag) for a filtered read of a big table, else /proc (socket-reader.ts). Default: BERTH_SOCKET_READER, else 'auto'. */
  via?: ReaderChoice;
}

/** "net:[4026531833]" from the ns link; fixture trees may hold a regular file instead. */
export function readNetns(procRoot = '/proc'): string {
  const path = join(procRoot, 'self', 'ns', 'net');
  try {
    return readlinkSync(path);
  } catch {
    return tryRead(path, 'latin1')?.trim() || 'unknown';
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
  if (opts.owners === true) map.owners = findSocketOwners(procRoot, new Set(sockets.filter((r) => r.inode !== 0).map((r) => r.inode)));
  else if (opts.owners) map.owners = findSocketOwners(procRoot, opts.owners);
  return map;
}

/** Rows whose local port is `port`, any protocol, family and state (each of them blocks a bind). */
export function socketsOnPort(map: Pick<HostMap, 'sockets'>, port: number): SocketRow[] {
  return map.sockets.filter((r) => r.localPort === port);
}

/** Who holds a row: "pid 1234 (python3) LISTEN", "uid 1000, owner not visible", "TIME_WAIT (no owner: kernel-held)". */
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
