import { isMap, isScalar, isSeq } from 'yaml';
import type { Node } from 'yaml';

/* Small helpers for walking a yaml Document with user-facing messages. */

/** Strict decimal: Number() alone would accept "0x10", " 1", "1e3". */
export function toUint(s: string): number | undefined {
  if (s.length === 0 || s.length > 9) return undefined;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  return Number(s);
}

/** The text the user wrote for a scalar (numbers keep their spelling, so 0x1F40 is not 8000). */
export function scalarText(node: Node | null | undefined): string | undefined {
  if (!node || !isScalar(node)) return undefined;
  if (typeof node.value === 'string') return node.value;
  if (typeof node.value === 'number') return node.source ?? String(node.value);
  return undefined;
}

/** Like scalarText, but booleans too (env values such as DEBUG: true). */
export function scalarTextOrBool(node: Node | null | undefined): string | undefined {
  if (node && isScalar(node) && typeof node.value === 'boolean') return node.source ?? String(node.value);
  return scalarText(node);
}

export function isNullish(node: Node | null | undefined): boolean {
  return node === null || node === undefined || (isScalar(node) && node.value === null);
}

export function kindOf(node: Node | null | undefined): string {
  if (node === null || node === undefined) return 'nothing';
  if (isMap(node)) return 'a mapping';
  if (isSeq(node)) return 'a list';
  if (isScalar(node)) {
    if (node.value === null) return 'nothing';
    return typeof node.value === 'string' ? `the text ${JSON.stringify(node.value)}` : `${typeof node.value} ${String(node.source ?? node.value)}`;
  }
  return 'an unsupported value';
}

/** Small edit distance, for "did you mean". */
export function distance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

export function didYouMean(word: string, allowed: Iterable<string>): string {
  let best: string | undefined;
  let bestD = 3;
  for (const k of allowed) {
    const d = distance(word.toLowerCase(), k.toLowerCase());
    // Short words are near everything: "zz" must not suggest "p2".
    if (d < bestD && d * 2 < word.length) {
      best = k;
      bestD = d;
    }
  }
  return best === undefined ? '' : ` (did you mean "${best}"?)`;
}

export const quoteList = (items: readonly string[]): string => items.map((k) => `"${k}"`).join(', ');

/**
 * yaml notices an unclosed "{", "[" or quote only where the next line starts; find the line
 * that opened it instead (the nearest earlier line with more openers than closers).
 */
export function unclosedBefore(text: string, message: string, errLine: number): { line: number; char: string } | undefined {
  const pairs: [string, string, string, string][] = [
    ['Flow map', '{', '}', '"{"'],
    ['Flow sequence', '[', ']', '"["'],
    ['"quote', '"', '"', 'double quote'],
    ["'quote", "'", "'", 'single quote'],
  ];
  const hit = pairs.find(([m]) => message.includes(m));
  if (!hit) return undefined;
  const [, open, close, shown] = hit;
  const lines = text.split('\n');
  for (let n = Math.min(errLine, lines.length); n >= 1; n--) {
    let opens = 0;
    let closes = 0;
    for (const ch of lines[n - 1]!) {
      if (ch === open) opens++;
      else if (ch === close) closes++;
    }
    if (open === close ? opens % 2 === 1 : opens > closes) return { line: n, char: shown };
  }
  return undefined;
}
