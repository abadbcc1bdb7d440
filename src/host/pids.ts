import { readdirSync } from 'node:fs';

/** A /proc entry that is a process: all digits (no regex: called for every entry of /proc). */
export function isPidName(name: string): boolean {
  if (name.length === 0) return false;
  for (let k = 0; k < name.length; k++) {
    const c = name.charCodeAt(k);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** Pids under procRoot now, in directory order; [] when it cannot be read. */
export function listPids(procRoot = '/proc'): number[] {
  try {
    return readdirSync(procRoot).filter(isPidName).map(Number);
  } catch {
    return [];
  }
}
