import { hexValue } from './proc-net-bytes.js';

/* Addresses of /proc/net/tcp{,6} and udp{,6} as text: the kernel's hex words in the host's byte order. */

/** Canonical text of 16 address bytes (RFC 5952: lower case, longest zero run as "::"). */
export function formatIPv6(bytes: ArrayLike<number>): string {
  const g: number[] = [];
  for (let k = 0; k < 8; k++) g.push(((bytes[2 * k] as number) << 8) | (bytes[2 * k + 1] as number));
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return `::ffff:${bytes[12]}.${bytes[13]}.${bytes[14]}.${bytes[15]}`;
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

/** A formatted IPv6 address keyed by its four 32-bit words as printed; chained on hash collisions. */
interface V6Entry {
  w0: number;
  w1: number;
  w2: number;
  w3: number;
  text: string;
  next: V6Entry | undefined;
}

/** The addresses of one table, cached by value: most rows share a handful, so each is formatted once. */
export class TableAddresses {
  readonly v4 = new Map<number, string>();
  readonly v6 = new Map<number, V6Entry>();
  constructor(
    readonly family: 4 | 6,
    readonly le: boolean,
  ) {}

  /** Printable form of the 8 hex digits at table[i..] (bounds checked by the caller), undefined when not hex. */
  v4Address(table: Uint8Array, i: number): string | undefined {
    const word = hexValue(table, i, 8);
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

  /** Printable form of the 32 hex digits at table[i..], undefined when not hex. */
  v6Address(table: Uint8Array, i: number): string | undefined {
    const w0 = hexValue(table, i, 8);
    const w1 = hexValue(table, i + 8, 8);
    const w2 = hexValue(table, i + 16, 8);
    const w3 = hexValue(table, i + 24, 8);
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
