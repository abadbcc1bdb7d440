/*
 * The bytes of a /proc/net table read in place: hex and decimal fields, blanks and tokens,
 * by index arithmetic (socket-table.ts says why).
 */

/** Hex digit value per byte, -1 for anything else. */
const HEX = new Int8Array(256).fill(-1);
for (let c = 0; c < 10; c++) HEX[48 + c] = c;
for (let c = 0; c < 6; c++) {
  HEX[65 + c] = 10 + c;
  HEX[97 + c] = 10 + c;
}

/** Value of `len` (<= 8) hex digits at bytes[i..]; -1 when any is not hex. Caller checks bounds. */
export function hexValue(bytes: Uint8Array, i: number, len: number): number {
  let v = 0;
  for (let k = i, e = i + len; k < e; k++) {
    const d = HEX[bytes[k] as number] as number;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/* Blanks are tested inline, not by a call per byte: `berth port` parses once, in a fresh process, where V8 still interprets this code. */

/** Index of the first non-blank byte at or after i (blank: space, tab, CR). */
export function skipWs(bytes: Uint8Array, i: number, end: number): number {
  for (; i < end; i++) {
    const c = bytes[i] as number;
    if (c !== 32 && c !== 9 && c !== 13) break;
  }
  return i;
}

/** End of the non-blank token starting at i. */
export function tokenEnd(bytes: Uint8Array, i: number, end: number): number {
  for (; i < end; i++) {
    const c = bytes[i] as number;
    if (c === 32 || c === 9 || c === 13) break;
  }
  return i;
}

export function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 48 && c <= 57;
}

export function isWs(c: number): boolean {
  return c === 32 || c === 9 || c === 13;
}

/** Decimal token bytes[i..j) as a number; -1 unless 1..15 digits only. */
export function decimal(bytes: Uint8Array, i: number, j: number): number {
  if (j <= i || j - i > 15) return -1;
  let v = 0;
  for (let k = i; k < j; k++) {
    const c = (bytes[k] as number) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}
