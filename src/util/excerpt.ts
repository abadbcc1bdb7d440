import { redactText } from './redact.js';

/** Longest text an error message quotes from a user's file. */
export const EXCERPT_CHARS = 60;

/**
 * A value from a user's file as an error message quotes it: redacted (`layout: /proc/self/environ` holds the whole
 * environment), cut to EXCERPT_CHARS with its full length said, JSON-quoted (controls escaped).
 */
export function quoteExcerpt(value: string): string {
  const r = redactText(value);
  if (r.length <= EXCERPT_CHARS) return JSON.stringify(r);
  return `${JSON.stringify(r.slice(0, EXCERPT_CHARS - 1) + '…')} (${value.length} characters)`;
}
