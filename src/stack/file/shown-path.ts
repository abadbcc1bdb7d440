import { isAbsolute, relative } from 'node:path';

/* How berth names a file in what it says: the stack file's errors and `berth up`'s messages alike. */

/** A path for messages: relative to `cwd` when below it. */
export function shownPath(abs: string, cwd: string = process.cwd()): string {
  const rel = relative(cwd, abs);
  return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? abs : rel;
}
