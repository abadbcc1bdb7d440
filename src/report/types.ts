import type { HostSysctls, PortRange, SocketRow, SocketOwner } from '../host/types.js';
import type { Band, Finding } from '../layout/types.js';
import type { LeaseRecord } from '../allocate/types.js';

/**
 * Everything `berth doctor --json` / `berth inspect --json` print, and what the HTML report
 * embeds and draws: the page adds nothing the JSON lacks.
 */
export interface PortSpaceReport {
  kind: 'doctor' | 'inspect';
  generatedAt: string;
  hostname: string;
  host: HostSysctls & { netns: string; ipv6: boolean; unreservedEphemeral: PortRange[]; skippedLines: number };
  layout?: { source: string; bands: Band[] };
  /** Ranges asked with --range (zoomed strips). */
  ranges: PortRange[];
  findings: Finding[];
  summary: { errors: number; warnings: number; infos: number };
  /** Sockets of interest (in bands, asked ports/ranges), with owners where visible. */
  sockets: (SocketRow & { owners?: SocketOwner[] })[];
  /** Total sockets in the table, by state, for the whole host. */
  socketCounts: Record<string, number>;
  /** live: a committed lease; not live: a port name without a record yet (a set in progress). Leases cannot go stale. */
  leases: (LeaseRecord & { live: boolean })[];
}
