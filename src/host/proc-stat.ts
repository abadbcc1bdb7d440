import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Start time of a process (field 22 of /proc/<pid>/stat, clock ticks since boot).
 * comm (field 2) may hold spaces and parentheses, so fields are counted after the last ')'.
 */
export function parseStatStartTime(stat: string): number | undefined {
  const close = stat.lastIndexOf(')');
  if (close < 0) return undefined;
  const rest = stat.slice(close + 2).split(' ');
  // rest[0] is field 3 (state); field 22 is rest[19].
  const v = rest[19];
  if (v === undefined || !/^\d+$/.test(v)) return undefined;
  return Number(v);
}

export function parseStatPpid(stat: string): number | undefined {
  const close = stat.lastIndexOf(')');
  if (close < 0) return undefined;
  const v = stat.slice(close + 2).split(' ')[1];
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
}

/** undefined when the process does not exist, cannot be read, or is a zombie: it holds no sockets, so a killed allocator's lease is stale. */
export function processStartTime(pid: number, procRoot = '/proc'): number | undefined {
  try {
    const stat = readFileSync(join(procRoot, String(pid), 'stat'), 'latin1');
    // State (field 3) Z or X: dead, only waiting to be reaped.
    const state = stat[stat.lastIndexOf(')') + 2];
    if (state === 'Z' || state === 'X') return undefined;
    return parseStatStartTime(stat);
  } catch {
    return undefined;
  }
}
