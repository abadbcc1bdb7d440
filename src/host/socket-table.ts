import type { PortRange, SocketProtocol, SocketRow, SocketTable, TcpState } from './types.js';

/*
 * /proc/net/tcp{,6} can hold tens of thousands of rows on a busy node and is read on
 * every allocation, so this parser walks the raw bytes (no string of the whole table is
 * ever made) with index arithmetic and never runs a regex or split per row. Address
 * strings are cached by their numeric value: most rows share a handful of local
 * addresses, so formatting happens once per distinct address and table.
 */

const STATES: readonly TcpState[] = [
  'UNKNOWN', 'ESTABLISHED', 'SYN_SENT', 'SYN_RECV', 'FIN_WAIT1', 'FIN_WAIT2', 'TIME_WAIT',
  'CLOSE', 'CLOSE_WAIT', 'LAST_ACK', 'LISTEN', 'CLOSING', 'NEW_SYN_RECV',
];

/** Name of a kernel TCP state number (include/net/tcp_states.h); UNKNOWN outside 1..12. */
export function tcpStateName(n: number): TcpState {
  return STATES[n] ?? 'UNKNOWN';
}

/** Hex digit value per byte, -1 for anything else. */
const HEX = new Int8Array(256).fill(-1);
for (let c = 0; c < 10; c++) HEX[48 + c] = c;
for (let c = 0; c < 6; c++) {
  HEX[65 + c] = 10 + c;
  HEX[97 + c] = 10 + c;
}

// Byte order of this machine, without loading node:os (startup time of `berth port`).
const HOST_LE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Value of `len` (<= 8) hex digits at b[i..]; -1 when any is not hex. Caller checks bounds. */
function hexValue(b: Uint8Array, i: number, len: number): number {
  let v = 0;
  for (let k = i, e = i + len; k < e; k++) {
    const d = HEX[b[k] as number] as number;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/*
 * The scanning helpers test blanks inline rather than through a function: `berth port`
 * parses the table once, in a fresh process, where V8 still interprets this code and a
 * call per byte costs more than the rest of the row.
 */

/** Index of the first non-blank byte at or after i (blank: space, tab, CR). */
function skipWs(b: Uint8Array, i: number, end: number): number {
  for (; i < end; i++) {
    const c = b[i] as number;
    if (c !== 32 && c !== 9 && c !== 13) break;
  }
  return i;
}

/** End of the non-blank token starting at i. */
function tokenEnd(b: Uint8Array, i: number, end: number): number {
  for (; i < end; i++) {
    const c = b[i] as number;
    if (c === 32 || c === 9 || c === 13) break;
  }
  return i;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 48 && c <= 57;
}

function isWs(c: number): boolean {
  return c === 32 || c === 9 || c === 13;
}

/** Decimal token b[i..j) as a number; -1 unless 1..15 digits only. */
function decimal(b: Uint8Array, i: number, j: number): number {
  if (j <= i || j - i > 15) return -1;
  let v = 0;
  for (let k = i; k < j; k++) {
    const c = (b[k] as number) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

/** Canonical text of 16 address bytes (RFC 5952: lower case, longest zero run as "::"). */
export function formatIPv6(b: ArrayLike<number>): string {
  const g: number[] = [];
  for (let k = 0; k < 8; k++) g.push(((b[2 * k] as number) << 8) | (b[2 * k + 1] as number));
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return `::ffff:${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
  }
  let bestAt = -1;
  let bestLen = 1; // a single zero group is not compressed
  for (let k = 0; k < 8; ) {
    if (g[k] !== 0) {
      k++;
      continue;
    }
    let e = k;
    while (e < 8 && g[e] === 0) e++;
    if (e - k > bestLen) {
      bestAt = k;
      bestLen = e - k;
    }
    k = e;
  }
  const hex = (from: number, to: number) => g.slice(from, to).map((x) => x.toString(16)).join(':');
  if (bestAt < 0) return hex(0, 8);
  return `${hex(0, bestAt)}::${hex(bestAt + bestLen, 8)}`;
}

export interface ParseTcpOptions {
  /** Byte order of the host that wrote the table; defaults to this machine's. */
  littleEndian?: boolean;
  /**
   * Only rows whose local port lies in these ranges. The others are passed over as soon
   * as their local port is read: not built, not checked further, not counted in
   * `skipped` (an allocator needs only the ports it may hand out, and most of a busy
   * node's table is elsewhere). A line whose local port cannot be read is parsed in full
   * and counted as before.
   */
  localPorts?: readonly PortRange[];
  /**
   * Which table the bytes are: /proc/net/udp{,6} has the same columns as tcp{,6} (its `st`
   * is 07 unconnected or 01 connected), so one parser reads both. Default 'tcp'.
   */
  protocol?: SocketProtocol;
}

/** A formatted IPv6 address keyed by its four 32-bit words as printed; chained on hash collisions. */
interface V6Entry {
  w0: number;
  w1: number;
  w2: number;
  w3: number;
  text: string;
  next: V6Entry | undefined;
}

/** One table's parse state: the family, byte order and the address caches. */
class Ctx {
  readonly v4 = new Map<number, string>();
  readonly v6 = new Map<number, V6Entry>();
  constructor(
    readonly family: 4 | 6,
    readonly le: boolean,
    readonly protocol: SocketProtocol = 'tcp',
  ) {}

  /** Printable form of the 8 hex digits at b[i..] (bounds checked by the caller), undefined when not hex. */
  v4Address(b: Uint8Array, i: number): string | undefined {
    const word = hexValue(b, i, 8);
    if (word < 0) return undefined;
    let text = this.v4.get(word);
    if (text === undefined) {
      // The kernel prints the in-memory u32 with %08X: on little-endian hosts the first
      // octet of the address is the lowest byte of the word.
      const a = word >>> 24;
      const bb = (word >>> 16) & 255;
      const c = (word >>> 8) & 255;
      const d = word & 255;
      text = this.le ? `${d}.${c}.${bb}.${a}` : `${a}.${bb}.${c}.${d}`;
      this.v4.set(word, text);
    }
    return text;
  }

  /** Printable form of the 32 hex digits at b[i..], undefined when not hex. */
  v6Address(b: Uint8Array, i: number): string | undefined {
    const w0 = hexValue(b, i, 8);
    const w1 = hexValue(b, i + 8, 8);
    const w2 = hexValue(b, i + 16, 8);
    const w3 = hexValue(b, i + 24, 8);
    if (w0 < 0 || w1 < 0 || w2 < 0 || w3 < 0) return undefined;
    const h = (Math.imul(Math.imul(Math.imul(w0 | 0, 31) ^ (w1 | 0), 31) ^ (w2 | 0), 31) ^ (w3 | 0)) | 0;
    const first = this.v6.get(h);
    for (let e = first; e !== undefined; e = e.next) {
      if (e.w0 === w0 && e.w1 === w1 && e.w2 === w2 && e.w3 === w3) return e.text;
    }
    const bytes = new Uint8Array(16);
    const words = [w0, w1, w2, w3];
    for (let w = 0; w < 4; w++) {
      const v = words[w] as number;
      // Same %08X per 32-bit word as IPv4, four times.
      for (let k = 0; k < 4; k++) bytes[w * 4 + (this.le ? 3 - k : k)] = (v >>> (24 - 8 * k)) & 255;
    }
    const text = formatIPv6(bytes);
    this.v6.set(h, { w0, w1, w2, w3, text, next: first });
    return text;
  }
}

// Results of endpoint(): module scratch rather than an object per call, which is
// measurable at 60,000 rows x 2 endpoints.
let epAddr = '';
let epPort = 0;

/** One "ADDR:PORT" token at b[i..] into epAddr/epPort; returns the index after it, or -1. */
function endpoint(b: Uint8Array, i: number, end: number, ctx: Ctx): number {
  const len = ctx.family === 4 ? 8 : 32;
  if (i + len + 5 > end || b[i + len] !== 58 /* : */) return -1;
  const addr = ctx.family === 4 ? ctx.v4Address(b, i) : ctx.v6Address(b, i);
  if (addr === undefined) return -1;
  const port = hexValue(b, i + len + 1, 4);
  if (port < 0) return -1;
  const after = i + len + 5;
  if (after < end && !isWs(b[after] as number)) return -1;
  epAddr = addr;
  epPort = port;
  return after;
}

/** Parse one row in b[start..end); undefined when malformed or truncated. */
function parseRow(b: Uint8Array, start: number, end: number, ctx: Ctx): SocketRow | undefined {
  // "sl:" slot number
  let i = skipWs(b, start, end);
  let j = tokenEnd(b, i, end);
  if (j - i < 2 || b[j - 1] !== 58 || decimal(b, i, j - 1) < 0) return undefined;
  i = endpoint(b, skipWs(b, j, end), end, ctx);
  if (i < 0) return undefined;
  const localAddress = epAddr;
  const localPort = epPort;
  i = endpoint(b, skipWs(b, i, end), end, ctx);
  if (i < 0) return undefined;
  const remoteAddress = epAddr;
  const remotePort = epPort;
  i = skipWs(b, i, end);
  j = tokenEnd(b, i, end);
  if (j - i !== 2) return undefined;
  const st = hexValue(b, i, 2);
  if (st < 0) return undefined;
  // tx_queue:rx_queue, tr:tm->when, retrnsmt: present but not needed.
  for (let k = 0; k < 3; k++) {
    i = skipWs(b, j, end);
    j = tokenEnd(b, i, end);
    if (j === i) return undefined;
  }
  i = skipWs(b, j, end);
  j = tokenEnd(b, i, end);
  const uid = decimal(b, i, j);
  if (uid < 0) return undefined;
  i = skipWs(b, j, end); // timeout
  j = tokenEnd(b, i, end);
  if (j === i) return undefined;
  i = skipWs(b, j, end);
  j = tokenEnd(b, i, end);
  const inode = decimal(b, i, j);
  if (inode < 0) return undefined;
  // Every real row has more fields after the inode (refcount, pointer...). Requiring one
  // keeps a row cut inside its inode digits from passing with a wrong inode.
  if (skipWs(b, j, end) === end) return undefined;
  return {
    protocol: ctx.protocol,
    family: ctx.family,
    localAddress,
    localPort,
    remoteAddress,
    remotePort,
    state: tcpStateName(st),
    uid,
    inode,
  };
}

/** "sl" at b[i..]: the header's first word. */
function isHeaderStart(b: Uint8Array, i: number, end: number): boolean {
  return i + 1 < end && b[i] === 115 /* s */ && b[i + 1] === 108 /* l */;
}

/**
 * Local port of the row in b[start..end) when it lies outside `ranges`, else -1 (inside,
 * or the line is not shaped like a row: the full parse then decides).
 */
function portOutside(b: Uint8Array, start: number, end: number, family: 4 | 6, ranges: readonly PortRange[]): number {
  const len = family === 4 ? 8 : 32;
  // The kernel prints "%4d: ADDR:PORT": below 10,000 rows the port is at a fixed column. Found
  // there without walking the line, as most rows of a busy table are passed over here, and a
  // short-lived `berth port` runs this loop uncompiled (2,700 rows: 3.7 ms walked).
  let i = start + 6;
  if (!(b[start + 4] === 58 /* : */ && b[start + 5] === 32 && isDigit(b[start + 3]))) {
    i = tokenEnd(b, skipWs(b, start, end), end); // "sl:"
    i = skipWs(b, i, end);
  }
  if (i + len + 5 > end || b[i + len] !== 58 /* : */) return -1;
  const port = hexValue(b, i + len + 1, 4);
  if (port < 0) return -1;
  for (let k = 0; k < ranges.length; k++) {
    const r = ranges[k] as PortRange;
    if (port >= r.lo && port <= r.hi) return -1;
  }
  return port;
}

/**
 * Parse a table's bytes, appending rows to `rows`; returns how many lines were skipped.
 * The one implementation behind parseTcpTable and parseTcpBuffer.
 */
function parseInto(b: Uint8Array, family: 4 | 6, opts: ParseTcpOptions, rows: SocketRow[]): number {
  const ctx = new Ctx(family, opts.littleEndian ?? HOST_LE, opts.protocol ?? 'tcp');
  const only = opts.localPorts;
  let skipped = 0;
  let sawContent = false;
  const n = b.length;
  let pos = 0;
  while (pos < n) {
    let end = b.indexOf(10, pos);
    if (end < 0) end = n;
    const first = skipWs(b, pos, end);
    if (first < end) {
      const c = b[first] as number;
      if (c >= 48 && c <= 57) {
        if (only !== undefined && portOutside(b, pos, end, family, only) >= 0) {
          pos = end + 1;
          sawContent = true;
          continue;
        }
        const row = parseRow(b, pos, end, ctx);
        if (row) rows.push(row);
        else skipped++;
      } else if (!(sawContent === false && isHeaderStart(b, first, end))) {
        skipped++;
      }
      sawContent = true;
    }
    pos = end + 1;
  }
  return skipped;
}

/**
 * Rows of /proc/net/tcp (family 4) or /proc/net/tcp6 (family 6), or of udp/udp6 with
 * `protocol: 'udp'`. The header line and
 * blank lines are ignored; any other line that does not parse is counted in `skipped`
 * (a table read while sockets come and go can end mid-row), never thrown.
 */
export function parseTcpTable(text: string, family: 4 | 6, opts: ParseTcpOptions = {}): SocketTable {
  // UTF-8 keeps ASCII as is and turns any other character into bytes >= 0x80, which no
  // rule accepts: lines parse or fail exactly as the characters would.
  return parseTcpBuffer(Buffer.from(text, 'utf8'), family, opts);
}

/**
 * parseTcpTable on the table's raw bytes, as read from the file: no string of the whole
 * table is made. `into` appends the rows to an existing array (both families of a host map).
 */
export function parseTcpBuffer(bytes: Uint8Array, family: 4 | 6, opts: ParseTcpOptions = {}, into: SocketRow[] = []): SocketTable {
  const skipped = parseInto(bytes, family, opts, into);
  return { rows: into, skipped };
}

/** Every local port with a socket in any state: all of them block a plain bind() (docs/leases.md). */
export function portsInUse(rows: readonly SocketRow[] | SocketTable): Set<number> {
  const list = Array.isArray(rows) ? rows : (rows as SocketTable).rows;
  const out = new Set<number>();
  for (const r of list) out.add(r.localPort);
  return out;
}
