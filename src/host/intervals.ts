import type { PortRange } from './host-map.js';

/** Sort and merge overlapping or adjacent ranges. */
export function normalizeRanges(ranges: readonly PortRange[]): PortRange[] {
  const sorted = ranges.filter((r) => r.lo <= r.hi).map((r) => ({ lo: r.lo, hi: r.hi })).sort((a, b) => a.lo - b.lo);
  const out: PortRange[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && r.lo <= last.hi + 1) last.hi = Math.max(last.hi, r.hi);
    else out.push(r);
  }
  return out;
}

/** Parts of `a` not covered by any of `minus` (which must be normalized). */
export function subtractRanges(a: PortRange, minus: readonly PortRange[]): PortRange[] {
  const out: PortRange[] = [];
  let cursor = a.lo;
  for (const m of minus) {
    if (m.hi < cursor) continue;
    if (m.lo > a.hi) break;
    if (m.lo > cursor) out.push({ lo: cursor, hi: Math.min(m.lo - 1, a.hi) });
    cursor = Math.max(cursor, m.hi + 1);
    if (cursor > a.hi) break;
  }
  if (cursor <= a.hi) out.push({ lo: cursor, hi: a.hi });
  return out;
}

export function intersectRanges(a: PortRange, b: PortRange): PortRange | undefined {
  const lo = Math.max(a.lo, b.lo);
  const hi = Math.min(a.hi, b.hi);
  return lo <= hi ? { lo, hi } : undefined;
}

export function rangeSize(r: PortRange): number {
  return r.hi - r.lo + 1;
}

export function inRanges(port: number, ranges: readonly PortRange[]): boolean {
  for (const r of ranges) if (port >= r.lo && port <= r.hi) return true;
  return false;
}

export function formatRange(r: PortRange): string {
  return r.lo === r.hi ? String(r.lo) : `${r.lo}-${r.hi}`;
}

/** The unreserved part of the ephemeral range: ports the kernel may hand to connect(). */
export function unreservedEphemeral(ephemeral: PortRange, reserved: readonly PortRange[]): PortRange[] {
  return subtractRanges(ephemeral, normalizeRanges(reserved));
}
