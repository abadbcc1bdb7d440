import { endianness } from 'node:os';
import type { SocketRow, SocketTable, TcpState } from './types.js';

/*
 * /proc/net/tcp{,6} can hold tens of thousands of rows on a busy node and is read on
 * every allocation, so this parser walks character codes with indexOf and never runs a
 * regex or split per row. Address strings are cached: most rows share a handful of
 * local addresses, so formatting happens once per distinct address.
 */

const STATES: readonly TcpState[] = [
  'UNKNOWN', 'ESTABLISHED', 'SYN_SENT', 'SYN_RECV', 'FIN_WAIT1', 'FIN_WAIT2', 'TIME_WAIT',
  'CLOSE', 'CLOSE_WAIT', 'LAST_ACK', 'LISTEN', 'CLOSING', 'NEW_SYN_RECV',
];

/** Name of a kernel TCP state number (include/net/tcp_states.h); UNKNOWN outside 1..12. */
export function tcpStateName(n: number): TcpState {
  return STATES[n] ?? 'UNKNOWN';
}

const HEX = new Int8Array(128).fill(-1);
for (let c = 0; c < 10; c++) HEX[48 + c] = c;
for (let c = 0; c < 6; c++) {
  HEX[65 + c] = 10 + c;
  HEX[97 + c] = 10 + c;
}

/** Hex digit value at s[i], -1 when not a hex digit (or past the end: charCodeAt gives NaN). */
function hexAt(s: string, i: number): number {
  const c = s.charCodeAt(i);
  return c < 128 ? (HEX[c] as number) : -1;
}

/** Value of `len` hex digits at s[i..], -1 when any is not hex. len <= 8 keeps it exact. */
function hexValue(s: string, i: number, len: number): number {
  let v = 0;
  for (let k = 0; k < len; k++) {
    const d = hexAt(s, i + k);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

function isWs(c: number): boolean {
  return c === 32 || c === 9 || c === 13;
}

function skipWs(s: string, i: number, end: number): number {
  while (i < end && isWs(s.charCodeAt(i))) i++;
  return i;
}

/** End of the non-blank token starting at i. */
function tokenEnd(s: string, i: number, end: number): number {
  while (i < end && !isWs(s.charCodeAt(i))) i++;
  return i;
}

/** Decimal token s[i..j) as a number; -1 unless 1..15 digits only. */
function decimal(s: string, i: number, j: number): number {
  if (j <= i || j - i > 15) return -1;
  let v = 0;
  for (let k = i; k < j; k++) {
    const c = s.charCodeAt(k) - 48;
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
}

interface Ctx {
  family: 4 | 6;
  le: boolean;
  v4: Map<number, string>;
  v6: Map<string, string>;
}

/** Printable form of the address hex at s[i..i+8) or s[i..i+32), undefined when not hex. */
function address(s: string, i: number, ctx: Ctx): string | undefined {
  if (ctx.family === 4) {
    const word = hexValue(s, i, 8);
    if (word < 0) return undefined;
    let text = ctx.v4.get(word);
    if (text === undefined) {
      // The kernel prints the in-memory u32 with %08X: on little-endian hosts the first
      // octet of the address is the lowest byte of the word.
      const a = word >>> 24;
      const b = (word >>> 16) & 255;
      const c = (word >>> 8) & 255;
      const d = word & 255;
      text = ctx.le ? `${d}.${c}.${b}.${a}` : `${a}.${b}.${c}.${d}`;
      ctx.v4.set(word, text);
    }
    return text;
  }
  const key = s.slice(i, i + 32);
  let text = ctx.v6.get(key);
  if (text === undefined) {
    const bytes = new Uint8Array(16);
    for (let w = 0; w < 4; w++) {
      for (let k = 0; k < 4; k++) {
        const v = hexValue(key, w * 8 + k * 2, 2);
        if (v < 0) return undefined;
        // Same %08X per 32-bit word as IPv4, four times.
        bytes[w * 4 + (ctx.le ? 3 - k : k)] = v;
      }
    }
    text = formatIPv6(bytes);
    ctx.v6.set(key, text);
  }
  return text;
}

const ADDR_LEN = { 4: 8, 6: 32 } as const;

// Results of endpoint(): module scratch rather than an object per call, which is
// measurable at 60,000 rows x 2 endpoints.
let epAddr = '';
let epPort = 0;

/** One "ADDR:PORT" token at s[i..] into epAddr/epPort; returns the index after it, or -1. */
function endpoint(s: string, i: number, end: number, ctx: Ctx): number {
  const len = ADDR_LEN[ctx.family];
  if (i + len + 5 > end || s.charCodeAt(i + len) !== 58 /* : */) return -1;
  const addr = address(s, i, ctx);
  if (addr === undefined) return -1;
  const port = hexValue(s, i + len + 1, 4);
  if (port < 0) return -1;
  const after = i + len + 5;
  if (after < end && !isWs(s.charCodeAt(after))) return -1;
  epAddr = addr;
  epPort = port;
  return after;
}

/** Parse one row in s[start..end); undefined when malformed or truncated. */
function parseRow(s: string, start: number, end: number, ctx: Ctx): SocketRow | undefined {
  // "sl:" slot number
  let i = skipWs(s, start, end);
  let j = tokenEnd(s, i, end);
  if (j - i < 2 || s.charCodeAt(j - 1) !== 58 || decimal(s, i, j - 1) < 0) return undefined;
  i = endpoint(s, skipWs(s, j, end), end, ctx);
  if (i < 0) return undefined;
  const localAddress = epAddr;
  const localPort = epPort;
  i = endpoint(s, skipWs(s, i, end), end, ctx);
  if (i < 0) return undefined;
  const remoteAddress = epAddr;
  const remotePort = epPort;
  i = skipWs(s, i, end);
  j = tokenEnd(s, i, end);
  if (j - i !== 2) return undefined;
  const st = hexValue(s, i, 2);
  if (st < 0) return undefined;
  // tx_queue:rx_queue, tr:tm->when, retrnsmt: present but not needed.
  for (let k = 0; k < 3; k++) {
    i = skipWs(s, j, end);
    j = tokenEnd(s, i, end);
    if (j === i) return undefined;
  }
  i = skipWs(s, j, end);
  j = tokenEnd(s, i, end);
  const uid = decimal(s, i, j);
  if (uid < 0) return undefined;
  i = skipWs(s, j, end); // timeout
  j = tokenEnd(s, i, end);
  if (j === i) return undefined;
  i = skipWs(s, j, end);
  j = tokenEnd(s, i, end);
  const inode = decimal(s, i, j);
  if (inode < 0) return undefined;
  // Every real row has more fields after the inode (refcount, pointer...). Requiring one
  // keeps a row cut inside its inode digits from passing with a wrong inode.
  if (skipWs(s, j, end) === end) return undefined;
  return {
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

/**
 * Rows of /proc/net/tcp (family 4) or /proc/net/tcp6 (family 6). The header line and
 * blank lines are ignored; any other line that does not parse is counted in `skipped`
 * (a table read while sockets come and go can end mid-row), never thrown.
 */
export function parseTcpTable(text: string, family: 4 | 6, opts: ParseTcpOptions = {}): SocketTable {
  const ctx: Ctx = { family, le: opts.littleEndian ?? endianness() === 'LE', v4: new Map(), v6: new Map() };
  const rows: SocketRow[] = [];
  let skipped = 0;
  let sawContent = false;
  const n = text.length;
  let pos = 0;
  while (pos < n) {
    let end = text.indexOf('\n', pos);
    if (end < 0) end = n;
    const first = skipWs(text, pos, end);
    if (first < end) {
      const c = text.charCodeAt(first);
      if (c >= 48 && c <= 57) {
        const row = parseRow(text, pos, end, ctx);
        if (row) rows.push(row);
        else skipped++;
      } else if (!(sawContent === false && text.startsWith('sl', first))) {
        skipped++;
      }
      sawContent = true;
    }
    pos = end + 1;
  }
  return { rows, skipped };
}

/** Every local port with a socket in any state: all of them block a plain bind() (design §1). */
export function portsInUse(rows: readonly SocketRow[] | SocketTable): Set<number> {
  const list = Array.isArray(rows) ? rows : (rows as SocketTable).rows;
  const out = new Set<number>();
  for (const r of list) out.add(r.localPort);
  return out;
}
