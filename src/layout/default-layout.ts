import { subtractRanges, unreservedEphemeral } from '../host/intervals.js';
import type { HostSysctls, PortRange } from '../host/host-map.js';
import type { Layout } from './layout-model.js';

export const DEFAULT_SOURCE = '<default>';
export const DEFAULT_BAND = 'default';

/** Lowest port berth hands out on its own: the unprivileged start, and never a well-known port. */
export function usableFloor(host: HostSysctls): number {
  return Math.max(host.unprivilegedStart, 1024);
}

/** Ports a band may use on this host: above the floor and outside the unreserved ephemeral range. */
export function usableRanges(host: HostSysctls): PortRange[] {
  const floor = usableFloor(host);
  if (floor > 65535) return [];
  return subtractRanges({ lo: floor, hi: 65535 }, unreservedEphemeral(host.ephemeral, host.reserved));
}

/**
 * The layout used when none is given: one band "default" over the largest run of usable
 * ports (the lowest one on a tie). Reserved ports inside the ephemeral range count as
 * usable, since the kernel never hands them to connect(). No band when nothing is usable;
 * checkLayout then reports it with the sysctl line that frees some.
 */
export function defaultLayout(host: HostSysctls): Layout {
  let best: PortRange | undefined;
  for (const r of usableRanges(host)) {
    if (!best || r.hi - r.lo > best.hi - best.lo) best = r;
  }
  return { source: DEFAULT_SOURCE, bands: best ? [{ name: DEFAULT_BAND, lo: best.lo, hi: best.hi }] : [] };
}
