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

/** State letter (field 3): 'Z' is a zombie, dead but not yet reaped by its parent. */
function parseStatState(stat: string): string | undefined {
  const close = stat.lastIndexOf(')');
  return close < 0 ? undefined : stat[close + 2];
}

/**
 * undefined when the process does not exist, cannot be read, or is dead and only waits to
 * be reaped (a zombie holds no sockets and owns nothing: a lease of a killed allocator whose
 * parent has not reaped it yet is stale, not live).
 */
export function processStartTime(pid: number, procRoot = '/proc'): number | undefined {
  try {
    const stat = readFileSync(join(procRoot, String(pid), 'stat'), 'latin1');
    const state = parseStatState(stat);
    if (state === 'Z' || state === 'X') return undefined;
    return parseStatStartTime(stat);
  } catch {
    return undefined;
  }
}
