import { readdirSync, readFileSync } from 'node:fs';

// /proc read without failing: an entry may vanish (a process ends) or be another user's between listing and reading.

/** Whether `s` is all ASCII digits (no regex: called for every entry of /proc). */
export function allDigits(s: string): boolean {
  if (s.length === 0) return false;
  for (let k = 0; k < s.length; k++) {
    const c = s.charCodeAt(k);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** Pids under procRoot now, in directory order; [] when it cannot be read. */
export function listPids(procRoot = '/proc'): number[] {
  try {
    return readdirSync(procRoot).filter(allDigits).map(Number);
  } catch {
    return [];
  }
}

/** A file's text, undefined when it cannot be read (the process ended, or is another user's). */
export function tryRead(path: string, encoding: BufferEncoding = 'utf8'): string | undefined {
  try {
    return readFileSync(path, encoding);
  } catch {
    return undefined;
  }
}
