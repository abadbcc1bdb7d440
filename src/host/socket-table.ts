import { TableAddresses } from './proc-net-address.js';
import { decimal, hexValue, isDigit, isWs, skipWs, tokenEnd } from './proc-net-bytes.js';
import type { PortRange, SocketProtocol, SocketRow, SocketTable, TcpState } from './host-map.js';

/*
 * /proc/net/tcp{,6} can hold tens of thousands of rows and is read on every allocation, so this
 * parser walks the raw bytes with index arithmetic: no string of the table, no regex or split per
 * row. Most rows share a few local addresses, so each distinct one is formatted once per table.
 */

const STATES: readonly TcpState[] = [
  'UNKNOWN', 'ESTABLISHED', 'SYN_SENT', 'SYN_RECV', 'FIN_WAIT1', 'FIN_WAIT2', 'TIME_WAIT',
  'CLOSE', 'CLOSE_WAIT', 'LAST_ACK', 'LISTEN', 'CLOSING', 'NEW_SYN_RECV',
];

/** Name of a kernel TCP state number (include/net/tcp_states.h); UNKNOWN outside 1..12. */
export function tcpStateName(n: number): TcpState {
  return STATES[n] ?? 'UNKNOWN';
}

// Byte order of this machine, without loading node:os (startup time of `berth port`).
const HOST_LE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export interface ParseTcpOptions {
  /** Byte order of the host that wrote the table; defaults to this machine's. */
  littleEndian?: boolean;
  /** Only rows on these ports: the others are passed over, not counted in `skipped` (one whose port cannot be read is parsed in full). */
  localPorts?: readonly PortRange[];
  /** 'udp': /proc/net/udp{,6}, same columns (`st` 07 unconnected, 01 connected). Default 'tcp'. */
  protocol?: SocketProtocol;
}

// Results of endpoint(): module scratch, as an object per call is measurable at 60,000 rows.
let epAddr = '';
let epPort = 0;

/** One "ADDR:PORT" token at bytes[i..] into epAddr/epPort; returns the index after it, or -1. */
function endpoint(bytes: Uint8Array, i: number, end: number, addresses: TableAddresses): number {
  const len = addresses.family === 4 ? 8 : 32;
  if (i + len + 5 > end || bytes[i + len] !== 58 /* : */) return -1;
  const addr = addresses.family === 4 ? addresses.v4Address(bytes, i) : addresses.v6Address(bytes, i);
  if (addr === undefined) return -1;
  const port = hexValue(bytes, i + len + 1, 4);
  if (port < 0) return -1;
  const after = i + len + 5;
  if (after < end && !isWs(bytes[after] as number)) return -1;
  epAddr = addr;
  epPort = port;
  return after;
}

/** One row in bytes[start..end); undefined when malformed or truncated. */
function parseRow(bytes: Uint8Array, start: number, end: number, addresses: TableAddresses, protocol: SocketProtocol): SocketRow | undefined {
  // "sl:" slot number
  let i = skipWs(bytes, start, end);
  let j = tokenEnd(bytes, i, end);
  if (j - i < 2 || bytes[j - 1] !== 58 || decimal(bytes, i, j - 1) < 0) return undefined;
  i = endpoint(bytes, skipWs(bytes, j, end), end, addresses);
  if (i < 0) return undefined;
  const localAddress = epAddr;
  const localPort = epPort;
  i = endpoint(bytes, skipWs(bytes, i, end), end, addresses);
  if (i < 0) return undefined;
  const remoteAddress = epAddr;
  const remotePort = epPort;
  i = skipWs(bytes, i, end);
  j = tokenEnd(bytes, i, end);
  if (j - i !== 2) return undefined;
  const st = hexValue(bytes, i, 2);
  if (st < 0) return undefined;
  // tx_queue:rx_queue, tr:tm->when, retrnsmt: present but not needed.
  for (let k = 0; k < 3; k++) {
    i = skipWs(bytes, j, end);
    j = tokenEnd(bytes, i, end);
    if (j === i) return undefined;
  }
  i = skipWs(bytes, j, end);
  j = tokenEnd(bytes, i, end);
  const uid = decimal(bytes, i, j);
  if (uid < 0) return undefined;
  i = skipWs(bytes, j, end); // timeout
  j = tokenEnd(bytes, i, end);
  if (j === i) return undefined;
  i = skipWs(bytes, j, end);
  j = tokenEnd(bytes, i, end);
  const inode = decimal(bytes, i, j);
  if (inode < 0) return undefined;
  // Every real row has more fields after the inode (refcount, pointer...). Requiring one
  // keeps a row cut inside its inode digits from passing with a wrong inode.
  if (skipWs(bytes, j, end) === end) return undefined;
  return {
    protocol,
    family: addresses.family,
    localAddress,
    localPort,
    remoteAddress,
    remotePort,
    state: tcpStateName(st),
    uid,
    inode,
  };
}

/** "sl" at bytes[i..]: the header's first word. */
function isHeaderStart(bytes: Uint8Array, i: number, end: number): boolean {
  return i + 1 < end && bytes[i] === 115 /* s */ && bytes[i + 1] === 108 /* l */;
}

/**
 * Local port of the row in bytes[start..end) when it lies outside `ranges`, else -1 (inside,
 * or the line is not shaped like a row: the full parse then decides).
 */
function portOutside(bytes: Uint8Array, start: number, end: number, family: 4 | 6, ranges: readonly PortRange[]): number {
  const len = family === 4 ? 8 : 32;
  // The kernel prints "%4d: ADDR:PORT": below 10,000 rows the port is at a fixed column. Found
  // there without walking the line, as most rows of a busy table are passed over here, and a
  // short-lived `berth port` runs this loop uncompiled (2,700 rows: 3.7 ms walked).
  let i = start + 6;
  if (!(bytes[start + 4] === 58 /* : */ && bytes[start + 5] === 32 && isDigit(bytes[start + 3]))) {
    i = tokenEnd(bytes, skipWs(bytes, start, end), end); // "sl:"
    i = skipWs(bytes, i, end);
  }
  if (i + len + 5 > end || bytes[i + len] !== 58 /* : */) return -1;
  const port = hexValue(bytes, i + len + 1, 4);
  if (port < 0) return -1;
  for (let k = 0; k < ranges.length; k++) {
    const r = ranges[k] as PortRange;
    if (port >= r.lo && port <= r.hi) return -1;
  }
  return port;
}

/** Rows of /proc/net/tcp{,6} (or udp{,6}); a line that does not parse is counted in `skipped` (a table can end mid-row), never thrown. */
export function parseTcpTable(text: string, family: 4 | 6, opts: ParseTcpOptions = {}): SocketTable {
  // UTF-8 turns any non-ASCII character into bytes >= 0x80, which no rule accepts.
  return parseTcpBuffer(Buffer.from(text, 'utf8'), family, opts);
}

/** parseTcpTable on the table's raw bytes; `into` appends the rows to an existing array (both families of a host map). */
export function parseTcpBuffer(bytes: Uint8Array, family: 4 | 6, opts: ParseTcpOptions = {}, into: SocketRow[] = []): SocketTable {
  const addresses = new TableAddresses(family, opts.littleEndian ?? HOST_LE);
  const protocol = opts.protocol ?? 'tcp';
  const only = opts.localPorts;
  let skipped = 0;
  let sawContent = false;
  const n = bytes.length;
  let pos = 0;
  while (pos < n) {
    let end = bytes.indexOf(10, pos);
    if (end < 0) end = n;
    const first = skipWs(bytes, pos, end);
    if (first < end) {
      const c = bytes[first] as number;
      if (c >= 48 && c <= 57) {
        if (only !== undefined && portOutside(bytes, pos, end, family, only) >= 0) {
          pos = end + 1;
          sawContent = true;
          continue;
        }
        const row = parseRow(bytes, pos, end, addresses, protocol);
        if (row) into.push(row);
        else skipped++;
      } else if (!(sawContent === false && isHeaderStart(bytes, first, end))) {
        skipped++;
      }
      sawContent = true;
    }
    pos = end + 1;
  }
  return { rows: into, skipped };
}

/** Every local port with a socket in any state: all of them block a plain bind() (docs/leases.md). */
export function portsInUse(rows: readonly SocketRow[] | SocketTable): Set<number> {
  const list = Array.isArray(rows) ? rows : (rows as SocketTable).rows;
  return new Set(list.map((r) => r.localPort));
}
