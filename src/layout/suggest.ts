import { normalizeRanges, subtractRanges } from '../host/intervals.js';
import type { HostSysctls, PortRange } from '../host/host-map.js';
import { usableRanges } from './default-layout.js';
import type { Band } from './layout-model.js';

export interface RangeSuggestion {
  range: PortRange;
  /** Whether the suggestion keeps lo ≡ band.lo (mod window), so instance windows keep their alignment. */
  aligned: boolean;
}

/** Start in [min, max] congruent to `phase` mod `step` closest to `near` (lower on a tie). */
function closestAligned(min: number, max: number, near: number, step: number, phase: number): number | undefined {
  const target = Math.min(Math.max(near, min), max);
  const below = target - ((((target - phase) % step) + step) % step);
  let best: number | undefined;
  for (const c of [below, below + step]) {
    if (c < min || c > max) continue;
    if (best === undefined || Math.abs(c - near) < Math.abs(best - near)) best = c;
  }
  return best;
}

/**
 * Where a band of the same size could move on this host: above max(unprivileged start, 1024),
 * outside the unreserved ephemeral range, clear of `avoid` (the other bands), keeping window
 * alignment when any aligned spot exists, and the closest such spot to where the band is now.
 * Undefined when no run of free ports is large enough.
 */
export function suggestBandRange(band: Band, host: HostSysctls, avoid: readonly PortRange[]): RangeSuggestion | undefined {
  const size = band.hi - band.lo + 1;
  const taken = normalizeRanges(avoid);
  const runs = usableRanges(host).flatMap((r) => subtractRanges(r, taken)).filter((r) => r.hi - r.lo + 1 >= size);
  const pick = (step: number, phase: number): number | undefined => {
    let best: number | undefined;
    for (const r of runs) {
      const c = closestAligned(r.lo, r.hi - size + 1, band.lo, step, phase);
      if (c === undefined) continue;
      const d = Math.abs(c - band.lo);
      if (best === undefined || d < Math.abs(best - band.lo) || (d === Math.abs(best - band.lo) && c < best)) best = c;
    }
    return best;
  };
  const w = band.window;
  if (w !== undefined && w > 1) {
    const lo = pick(w, band.lo % w);
    if (lo !== undefined) return { range: { lo, hi: lo + size - 1 }, aligned: true };
  }
  const lo = pick(1, 0);
  if (lo === undefined) return undefined;
  return { range: { lo, hi: lo + size - 1 }, aligned: w === undefined || w === 1 };
}
