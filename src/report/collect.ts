import { hostname } from 'node:os';
import type { LeaseRecord } from '../allocate/allocation-types.js';
import { inRanges, normalizeRanges, unreservedEphemeral } from '../host/intervals.js';
import { findSocketOwners } from '../host/owners.js';
import { readHostMap } from '../host/read-host.js';
import type { HostMap, PortRange, SocketRow } from '../host/host-map.js';
import { checkLayout } from '../layout/check.js';
import { summarizeFindings } from '../layout/check-text.js';
import type { Finding, Layout } from '../layout/layout-model.js';
import { redactArgv } from '../util/redact.js';
import { stateText } from './format.js';
import { sharedListenerFindings } from './shared-listeners.js';
import type { PortSpaceReport } from './port-space-report.js';

export interface CollectOptions {
  kind: 'doctor' | 'inspect';
  procRoot?: string;
  layout?: Layout;
  /** Asked ports and ranges (inspect --port/--range, doctor --range). */
  ranges?: PortRange[];
  /** Leases with liveness, from the lease store of this namespace. */
  leases?: (LeaseRecord & { live: boolean })[];
  /** Extra findings from outside the layout check (e.g. lease store problems). */
  extraFindings?: Finding[];
  host?: HostMap;
  /** Nothing asked and no layout (`berth inspect` alone): show every LISTEN socket and unconnected UDP socket. */
  listeners?: boolean;
}

/** Gather what doctor/inspect show: one value for the text, JSON and HTML renderings alike. */
export function collectReport(opts: CollectOptions): PortSpaceReport {
  const ranges = opts.ranges ?? [];
  const bandRanges = (opts.layout?.bands ?? []).map((b) => ({ lo: b.lo, hi: b.hi }));
  const interest = normalizeRanges([...ranges, ...bandRanges]);
  const procRoot = opts.procRoot ?? '/proc';
  const base = opts.host ?? readHostMap({ procRoot });
  const listening = opts.listeners === true && interest.length === 0;
  // Listening: TCP's LISTEN and UDP's unconnected sockets (a UDP server receives on those).
  const rows: SocketRow[] = base.sockets.filter((r) =>
    listening ? r.state === 'LISTEN' || (r.protocol === 'udp' && r.state === 'CLOSE') : inRanges(r.localPort, interest),
  );
  const uid = process.getuid?.();
  const inodes = new Set(rows.map((r) => r.inode).filter((i) => i !== 0));
  // Owners only for the rows shown: the table itself is not read again.
  const host = inodes.size > 0 && !base.owners ? { ...base, owners: findSocketOwners(procRoot, inodes) } : base;
  const sockets = rows
    .sort((a, b) => a.localPort - b.localPort || a.state.localeCompare(b.state))
    .map((r) => {
      const owners = r.inode !== 0 ? host.owners?.get(r.inode) : undefined;
      // Other users' command lines go into files and tickets: the diagnostics' redaction applies.
      if (owners && owners.length > 0) return { ...r, owners: owners.map((o) => ({ ...o, cmdline: redactArgv(o.cmdline) })) };
      // Root, or the caller's own socket, sees every fd of its PID namespace: the holder is outside it.
      return r.inode === 0 ? { ...r } : { ...r, ownerHidden: uid === 0 || uid === r.uid ? ('pid-namespace' as const) : ('other-user' as const) };
    });
  const socketCounts: Record<string, number> = {};
  for (const r of host.sockets) {
    const k = stateText(r);
    socketCounts[k] = (socketCounts[k] ?? 0) + 1;
  }
  const findings = [...(opts.layout ? checkLayout(opts.layout, host) : []), ...sharedListenerFindings(sockets), ...(opts.extraFindings ?? [])];
  if (host.skippedLines > 0) {
    findings.push({
      severity: 'warning',
      code: 'socket-table-garbage',
      message: `${host.skippedLines} malformed line(s) in the socket table were skipped; ports on them may be reported free`,
    });
  }
  const report: PortSpaceReport = {
    kind: opts.kind,
    generatedAt: new Date().toISOString(),
    hostname: hostname(),
    host: {
      ephemeral: host.ephemeral,
      reserved: host.reserved,
      unprivilegedStart: host.unprivilegedStart,
      netns: host.netns,
      ipv6: host.ipv6,
      unreservedEphemeral: unreservedEphemeral(host.ephemeral, host.reserved),
      skippedLines: host.skippedLines,
    },
    ranges,
    findings,
    summary: summarizeFindings(findings),
    sockets,
    socketScope: listening ? 'listening' : 'asked',
    socketCounts,
    leases: opts.leases ?? [],
  };
  if (opts.layout) report.layout = { source: opts.layout.source, bands: opts.layout.bands };
  return report;
}
