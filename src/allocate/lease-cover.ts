import type { PortRun } from './lease-record.js';
import type { AllocatorClaim, LeaseTable, ListedRecord } from './lease-table.js';

/*
 * Which claim covers which listed port, bounded by what is bound, not by what names say: each port
 * is assigned once, to the first claim covering it. O(runs · log ports + ports): 8,000 forged
 * records each claiming 1-65535 cost 8,000 binary searches, not 500 million ports. Pure.
 */

/** For each of `ports`, the first of `claims` (in order) whose runs cover it. */
export function firstCover<T>(ports: Iterable<number>, claims: readonly T[], runsOf: (c: T) => readonly PortRun[]): Map<number, T> {
  const sorted = [...ports].sort((a, b) => a - b);
  const out = new Map<number, T>();
  // next[i]: the first index >= i not yet assigned (path-halving union-find over the sorted ports).
  const next = Array.from({ length: sorted.length + 1 }, (_, i) => i);
  const find = (i: number): number => {
    while (next[i] !== i) {
      next[i] = next[next[i]!]!;
      i = next[i]!;
    }
    return i;
  };
  for (const c of claims) {
    if (out.size === sorted.length) break;
    for (const run of runsOf(c)) {
      let lo = 0;
      let hi = sorted.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (sorted[mid]! < run.lo) lo = mid + 1;
        else hi = mid;
      }
      for (let i = find(lo); i < sorted.length && sorted[i]! <= run.hi; i = find(i + 1)) {
        out.set(sorted[i]!, c);
        next[i] = i + 1;
      }
    }
  }
  return out;
}

/** The record of each port name of `table` (that `wanted` accepts): the first complete record naming it. */
export function recordsByPort(table: LeaseTable, wanted: (port: number) => boolean = () => true): Map<number, ListedRecord> {
  return firstCover([...table.ports.keys()].filter(wanted), table.records, (r) => r.ports);
}

/** The allocator whose range holds each of `ports` (for messages about sets in progress). */
export function allocatorsByPort(table: LeaseTable, ports: Iterable<number>, skip?: (a: AllocatorClaim) => boolean): Map<number, AllocatorClaim> {
  const claims = skip === undefined ? table.allocators : table.allocators.filter((a) => !skip(a));
  return firstCover(ports, claims, (a) => [a]);
}
