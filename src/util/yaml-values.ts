import { isMap, isScalar, isSeq } from 'yaml';
import type { Node } from 'yaml';
import { EXCERPT_CHARS, quoteExcerpt } from './excerpt.js';

/** Strict decimal: Number() alone would accept "0x10", " 1", "1e3"; "7_000" slips through YAML as a string. */
export function toUint(s: string): number | undefined {
  return /^[0-9]{1,9}$/.test(s) ? Number(s) : undefined;
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

/** Absent, or written but empty ("key:" or "key: ~"). */
export function isNullish(node: Node | null | undefined): boolean {
  return node === null || node === undefined || (isScalar(node) && node.value === null);
}

/** What was found, for "…, found X" messages. */
export function kindOf(node: Node | null | undefined): string {
  if (node === null || node === undefined) return 'nothing';
  if (isMap(node)) return 'a mapping';
  if (isSeq(node)) return 'a list';
  if (isScalar(node)) {
    if (node.value === null) return 'nothing';
    return typeof node.value === 'string' ? `the text ${quoteExcerpt(node.value)}` : `${typeof node.value} ${quoteless(String(node.source ?? node.value))}`;
  }
  return 'an unsupported value';
}

/** A number or boolean as written, shortened like a quoted text. */
function quoteless(s: string): string {
  return s.length <= EXCERPT_CHARS ? s : `${s.slice(0, EXCERPT_CHARS - 1)}… (${s.length} characters)`;
}
