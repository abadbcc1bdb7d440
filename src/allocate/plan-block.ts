import type { PortRange } from '../host/host-map.js';
import { shuffle } from './plan.js';
import type { Strategy } from './allocation-types.js';

/*
 * Where a block of `count` contiguous ports may start among planCandidates' candidates: one pass
 * over the sorted candidates, so O(candidates) however large the block. Pure.
 */

export interface BlockPlan {
  /** Start ports whose whole run p..p+count-1 is free, in the order to try them. */
  starts: number[];
  /** The longest free run seen (for the exit-69 message when no start fits). */
  longest: PortRange | undefined;
}

/** Maximal runs of consecutive ports in a list of ports (any order, duplicates allowed). */
export function freeRuns(ports: readonly number[]): PortRange[] {
  const sorted = [...new Set(ports)].sort((a, b) => a - b);
  const runs: PortRange[] = [];
  for (const p of sorted) {
    const last = runs[runs.length - 1];
    if (last !== undefined && p === last.hi + 1) last.hi = p;
    else runs.push({ lo: p, hi: p });
  }
  return runs;
}

/** Every start of a free run of `count` ports, lowest first or shuffled (random: concurrent allocators rarely aim at the same run). */
export function planBlockStarts(free: readonly number[], count: number, strategy: Strategy = 'lowest', rng: () => number = Math.random): BlockPlan {
  const starts: number[] = [];
  let longest: PortRange | undefined;
  for (const r of freeRuns(free)) {
    if (longest === undefined || r.hi - r.lo > longest.hi - longest.lo) longest = r;
    for (let p = r.lo; p + count - 1 <= r.hi; p++) starts.push(p);
  }
  if (strategy === 'random') shuffle(starts, rng);
  return { starts, longest };
}

/** The starts left once `lost` ports are known to be unavailable: no run may contain one. */
export function blockStartsWithout(starts: readonly number[], count: number, lost: ReadonlySet<number>): number[] {
  if (lost.size === 0) return [...starts];
  const bad = [...lost];
  return starts.filter((s) => !bad.some((p) => p >= s && p <= s + count - 1));
}

/** The ports of the run starting at `start`. */
export function blockPorts(start: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => start + i);
}
