import type { HostSysctls, PortRange } from '../host/host-map.js';

/*
 * The sysctl fix for a too-low ephemeral range, apart from the layout checker (check.ts) so
 * that `berth port`, which names this fix when a host has no default band, loads neither the
 * checker nor what it imports (start-up time: docs/scale.md §2).
 */

/** Linux's default ip_local_port_range. */
export const LINUX_EPHEMERAL_START = 32768;
export const LINUX_EPHEMERAL_END = 60999;

export function portRangeCommand(r: PortRange): string {
  return `sysctl -w net.ipv4.ip_local_port_range="${r.lo} ${r.hi}"`;
}

/** The ephemeral range berth suggests: Linux's default start, keeping a higher end. */
export function suggestedEphemeral(host: Pick<HostSysctls, 'ephemeral'>): PortRange {
  return { lo: LINUX_EPHEMERAL_START, hi: Math.max(host.ephemeral.hi, LINUX_EPHEMERAL_END) };
}
