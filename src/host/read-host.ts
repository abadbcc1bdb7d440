import { closeSync, fstatSync, openSync, readFileSync, readlinkSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { BerthError, EXIT } from '../errors.js';
import { findSocketOwners } from './owners.js';
import { parseTcpBuffer } from './socket-table.js';
import { readSysctls } from './sysctl.js';
import type { HostMap, PortRange, SocketRow } from './types.js';

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

/*
 * Reading the socket tables. The kernel makes /proc/net/tcp{,6} with seq_file: each
 * read() returns whole rows, as many as fit in its buffer (at least a page, 4096 bytes),
 * stopping early only at the end of the table. And every read() at the end walks the
 * whole TCP hash table again from its first bucket to find that nothing follows (about
 * 1.6 ms per file on a 24 GiB host even when the table is empty), so the customary
 * read-until-0 pays one full walk per file for the 0 alone. A read that returned
 * SEQ_SHORT bytes or fewer although far more were asked for cannot have stopped for
 * lack of buffer (no row is 1024 bytes long), so it ended the table: no further read
 * is needed. This holds only for seq_file; regular files (fixture trees, captured
 * tables) report their size in fstat and are read until read() returns 0.
 */
const SEQ_SHORT = 4096 - 1024;
/** Never ask for less than this, so a short read can only mean the end (see above). */
const MIN_ASK = 1 << 16;
const INITIAL = 1 << 18;
/** A buffer grown past this for a huge table is not kept after the read. */
const KEEP_MAX = 1 << 23;

/** Reused between reads: a busy node's table is megabytes, read on every allocation. */
let scratch = Buffer.allocUnsafe(INITIAL);

function ioError(path: string, e: unknown): BerthError {
  return new BerthError(EXIT.IOERR, `cannot read ${path}: ${(e as Error).message}`);
}

/**
 * The bytes of a socket table, undefined when the file does not exist. The result is a
 * view of a shared buffer, valid until the next call: parse it before reading again.
 */
function readTable(path: string): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw ioError(path, e);
  }
  try {
    const seqFile = fstatSync(fd).size === 0;
    let len = 0;
    for (;;) {
      if (scratch.length - len < MIN_ASK) {
        const bigger = Buffer.allocUnsafe(scratch.length * 2);
        scratch.copy(bigger, 0, 0, len);
        scratch = bigger;
      }
      const n = readSync(fd, scratch, len, scratch.length - len, null);
      if (n === 0) break;
      len += n;
      if (seqFile && n <= SEQ_SHORT) break;
    }
    return scratch.subarray(0, len);
  } catch (e) {
    throw ioError(path, e);
  } finally {
    closeSync(fd);
  }
}

/**
 * The text of /proc/net/tcp or tcp6 read as readHostMap reads it (one hash-table walk, not
 * two; see above), for callers that search the text themselves; undefined when missing.
 */
export function readSocketTableText(path: string): string | undefined {
  return readTable(path)?.toString('latin1');
}

/** The host port map (design §2): sysctls, every TCP socket, and owners when asked. */
export function readHostMap(opts: ReadHostOptions = {}): HostMap {
  const procRoot = opts.procRoot ?? '/proc';
  const tcpPath = join(procRoot, 'net', 'tcp');
  const tcpBytes = readTable(tcpPath);
  if (tcpBytes === undefined) {
    throw new BerthError(EXIT.IOERR, `cannot read ${tcpPath}: missing (is ${procRoot} a Linux /proc?)`);
  }
  // Both families into one array; each table is parsed before the next read reuses the buffer.
  const sockets: SocketRow[] = [];
  const parseOpts = opts.localPorts === undefined ? {} : { localPorts: opts.localPorts };
  let skippedLines = parseTcpBuffer(tcpBytes, 4, parseOpts, sockets).skipped;
  const tcp6Bytes = readTable(join(procRoot, 'net', 'tcp6'));
  if (tcp6Bytes !== undefined) skippedLines += parseTcpBuffer(tcp6Bytes, 6, parseOpts, sockets).skipped;
  if (scratch.length > KEEP_MAX) scratch = Buffer.allocUnsafe(INITIAL);
  const map: HostMap = {
    ...readSysctls(procRoot),
    netns: readNetns(procRoot),
    sockets,
    skippedLines,
    ipv6: tcp6Bytes !== undefined,
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
