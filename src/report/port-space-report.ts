import type { HostSysctls, PortRange, SocketRow, SocketOwner } from '../host/host-map.js';
import type { Band, Finding } from '../layout/layout-model.js';
import type { LeaseRecord } from '../allocate/allocation-types.js';

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
  /** Sockets in bands and asked ranges (or every listener), owners where visible; `ownerHidden`: why a holder is not named. */
  sockets: (SocketRow & { owners?: SocketOwner[]; ownerHidden?: 'other-user' | 'pid-namespace' })[];
  /** 'asked': the sockets in bands and asked ranges; 'listening': nothing was asked, every LISTEN socket and unconnected UDP socket. */
  socketScope?: 'asked' | 'listening';
  /** Total sockets in the table, by state ("UDP UNCONN", "UDP ESTAB" for UDP), for the whole host. */
  socketCounts: Record<string, number>;
  /** live: a committed lease; not live: a port name without a record yet (a set in progress). Leases cannot go stale. */
  leases: (LeaseRecord & { live: boolean })[];
}
