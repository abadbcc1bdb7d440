import { join } from 'node:path';
import { tryRead } from './proc-read.js';

/** Field 3 + `k` of /proc/<pid>/stat as a number: comm (field 2) may hold spaces and parentheses, so fields are counted after the last ')'. */
function statField(stat: string, k: number): number | undefined {
  const close = stat.lastIndexOf(')');
  const v = close < 0 ? undefined : stat.slice(close + 2).split(' ')[k];
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
}

/** Start time of a process (field 22, clock ticks since boot). */
export function parseStatStartTime(stat: string): number | undefined {
  return statField(stat, 19);
}

export function parseStatPpid(stat: string): number | undefined {
  return statField(stat, 1);
}

/** State (field 3) Z or X: dead, only waiting to be reaped. */
export function statDead(stat: string): boolean {
  const state = stat[stat.lastIndexOf(')') + 2];
  return state === 'Z' || state === 'X';
}

/** undefined when the process does not exist, cannot be read, or is a zombie: it holds no sockets, so a killed allocator's lease is stale. */
export function processStartTime(pid: number, procRoot = '/proc'): number | undefined {
  const stat = tryRead(join(procRoot, String(pid), 'stat'), 'latin1');
  return stat === undefined || statDead(stat) ? undefined : parseStatStartTime(stat);
}
