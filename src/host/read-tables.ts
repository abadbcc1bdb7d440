import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { BerthError, EXIT } from '../errors.js';
import { parseTcpBuffer } from './socket-table.js';
import type { PortRange, SocketRow } from './host-map.js';

/*
 * The kernel makes /proc/net/tcp{,6} with seq_file: each read() returns whole rows, as many as
 * fit in its buffer (at least a page), short only at the end of the table. Every read() at the
 * end walks the whole TCP hash table again to find nothing follows (1.6 ms per file on a 24 GiB
 * host, even empty), so read-until-0 pays a full walk for the 0 alone. A read of SEQ_SHORT bytes
 * or fewer when far more were asked for ended the table (no row is 1024 bytes long). Regular
 * files (fixtures, captured tables) report their size in fstat and are read until 0.
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

export interface ProcTables {
  rows: SocketRow[];
  skipped: number;
  /** Whether tcp6 exists. */
  ipv6: boolean;
}

/** Rows of both TCP tables (and UDP tables with `udp`), on `localPorts` when given. Throws without /proc/net/tcp; a missing udp table is empty. */
export function readProcTables(procRoot: string, localPorts?: readonly PortRange[], udp = false): ProcTables {
  const tcpPath = join(procRoot, 'net', 'tcp');
  const tcpBytes = readTable(tcpPath);
  if (tcpBytes === undefined) {
    throw new BerthError(EXIT.IOERR, `cannot read ${tcpPath}: missing (is ${procRoot} a Linux /proc?)`);
  }
  // Every table into one array; each is parsed before the next read reuses the buffer.
  const rows: SocketRow[] = [];
  const parseOpts = localPorts === undefined ? {} : { localPorts };
  let skipped = parseTcpBuffer(tcpBytes, 4, parseOpts, rows).skipped;
  const tcp6Bytes = readTable(join(procRoot, 'net', 'tcp6'));
  const ipv6 = tcp6Bytes !== undefined;
  if (tcp6Bytes !== undefined) skipped += parseTcpBuffer(tcp6Bytes, 6, parseOpts, rows).skipped;
  if (udp) {
    const udpOpts = { ...parseOpts, protocol: 'udp' as const };
    for (const [file, family] of [['udp', 4], ['udp6', 6]] as const) {
      const bytes = readTable(join(procRoot, 'net', file));
      if (bytes !== undefined) skipped += parseTcpBuffer(bytes, family, udpOpts, rows).skipped;
    }
  }
  if (scratch.length > KEEP_MAX) scratch = Buffer.allocUnsafe(INITIAL);
  return { rows, skipped, ipv6 };
}
