import { readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { BerthError, EXIT } from '../errors.js';
import { findSocketOwners } from './owners.js';
import { parseTcpTable } from './socket-table.js';
import { readSysctls } from './sysctl.js';
import type { HostMap, SocketRow } from './types.js';

export interface ReadHostOptions {
  /** Root of the proc filesystem; fixture trees in tests. Default '/proc'. */
  procRoot?: string;
  /**
   * Look up owning processes: true for every socket in the table, a set for only
   * those inodes. Off by default because it reads every process's fd directory.
   */
  owners?: boolean | ReadonlySet<number>;
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

function readTable(path: string): string | undefined {
  try {
    // latin1: the table is ASCII and latin1 decoding skips UTF-8 validation.
    return readFileSync(path, 'latin1');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new BerthError(EXIT.IOERR, `cannot read ${path}: ${(e as Error).message}`);
  }
}

/** The host port map (design §2): sysctls, every TCP socket, and owners when asked. */
export function readHostMap(opts: ReadHostOptions = {}): HostMap {
  const procRoot = opts.procRoot ?? '/proc';
  const tcpPath = join(procRoot, 'net', 'tcp');
  const tcpText = readTable(tcpPath);
  if (tcpText === undefined) {
    throw new BerthError(EXIT.IOERR, `cannot read ${tcpPath}: missing (is ${procRoot} a Linux /proc?)`);
  }
  const tcp6Text = readTable(join(procRoot, 'net', 'tcp6'));
  const v4 = parseTcpTable(tcpText, 4);
  const v6 = tcp6Text === undefined ? undefined : parseTcpTable(tcp6Text, 6);
  const sockets = v6 === undefined ? v4.rows : v4.rows.concat(v6.rows);
  const map: HostMap = {
    ...readSysctls(procRoot),
    netns: readNetns(procRoot),
    sockets,
    skippedLines: v4.skipped + (v6?.skipped ?? 0),
    ipv6: v6 !== undefined,
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

/** Rows whose local port is `port`, any family and state (each of them blocks a bind). */
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
  const owners = map.owners?.get(row.inode);
  if (owners && owners.length > 0) {
    const who = owners.map((o) => `pid ${o.pid} (${o.comm || '?'})`).join(', ');
    return `${who} ${row.state}`;
  }
  if (map.owners === undefined) return `uid ${row.uid}, owner not looked up`;
  return `uid ${row.uid}, owner not visible`;
}
