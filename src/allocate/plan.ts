import { inRanges, intersectRanges, normalizeRanges, unreservedEphemeral } from '../host/intervals.js';
import type { PortRange, SocketOwner, SocketRow } from '../host/host-map.js';
import { skippedByDefaultBand } from '../layout/well-known-ports.js';
import type { AllocationReport, PortSource, Strategy } from './allocation-types.js';

/*
 * Which ports of a source may be tried, in which order, and why the others may not.
 * Pure: host facts, leases and randomness come in as data.
 */

export interface PlanHost {
  ephemeral: PortRange;
  reserved: readonly PortRange[];
  unprivilegedStart: number;
  sockets: readonly SocketRow[];
  owners?: ReadonlyMap<number, SocketOwner[]>;
}

export interface PlanInput {
  source: PortSource;
  host: PlanHost;
  /** Ports with a lease (lease-domain.ts); `pending`: a set still being allocated, with its allocator's pid when known. */
  leased?: ReadonlyMap<number, { pid?: number; name?: string; uid?: number; pending?: { pid?: number } }>;
  allowEphemeral?: boolean;
  allowPrivileged?: boolean;
  isRoot?: boolean;
  strategy?: Strategy;
  /** [0, 1) like Math.random; injectable for tests. */
  rng?: () => number;
}

export interface Plan {
  /** Ports to try, in order. */
  candidates: number[];
  report: AllocationReport;
  /** The source as normalized ranges. */
  ranges: PortRange[];
  /** Parts of the source inside the unreserved ephemeral range (for the sysctl hint). */
  ephemeralInSource: PortRange[];
}

export function sourceRanges(source: PortSource): PortRange[] {
  if (source.kind === 'port') return [{ lo: source.port, hi: source.port }];
  return normalizeRanges([source.range]);
}

export function emptyReport(source: PortSource): AllocationReport {
  return { source, considered: 0, excluded: { ephemeral: 0, privileged: 0, inUse: [], leased: [], bindFailed: [], raced: [] } };
}

// LISTEN explains a busy port best; TIME_WAIT (kernel-held, no owner) least.
function rank(r: SocketRow): number {
  return r.state === 'LISTEN' ? 0 : r.inode !== 0 ? 1 : 2;
}

/** The most telling socket row per local port, for ports inside `ranges` only. */
export function busyPorts(sockets: readonly SocketRow[], ranges: readonly PortRange[]): Map<number, SocketRow> {
  const busy = new Map<number, SocketRow>();
  for (const r of sockets) {
    // Any state, either family, either protocol: each blocks a bind of the port (TIME_WAIT
    // included, see docs/leases.md; a UDP socket blocks the UDP side, which berth cannot know the
    // service will not want, and a service told a port holds it as a whole).
    if (!inRanges(r.localPort, ranges)) continue;
    const prev = busy.get(r.localPort);
    if (prev === undefined || rank(r) < rank(prev)) busy.set(r.localPort, r);
  }
  return busy;
}

/** What the exit-69 message says of a busy port: its most telling row, and that row's owner when known. */
export function inUseEntry(port: number, row: SocketRow, owner: SocketOwner | undefined): AllocationReport['excluded']['inUse'][number] {
  return {
    port,
    state: row.state,
    uid: row.uid,
    ...(row.protocol === 'udp' ? { protocol: 'udp' as const } : {}),
    ...(owner ? { pid: owner.pid, command: owner.cmdline.length > 0 ? owner.cmdline.join(' ') : owner.comm } : {}),
  };
}

/** Fisher–Yates in place (shared with plan-block.ts). */
export function shuffle(a: number[], rng: () => number): void {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.min(i, Math.floor(rng() * (i + 1)));
    const t = a[i]!;
    a[i] = a[j]!;
    a[j] = t;
  }
}

export function planCandidates(input: PlanInput): Plan {
  const { source, host } = input;
  const ranges = sourceRanges(source);
  const report = emptyReport(source);
  const ephemeral = input.allowEphemeral ? [] : unreservedEphemeral(host.ephemeral, host.reserved);
  const ephemeralInSource = ephemeral.flatMap((e) => ranges.map((r) => intersectRanges(e, r)).filter((x) => x !== undefined));
  const privilegedOk = input.allowPrivileged === true && input.isRoot === true;
  const busy = busyPorts(host.sockets, ranges);
  const candidates: number[] = [];
  for (const r of ranges) {
    for (let p = r.lo; p <= r.hi; p++) {
      // The built-in band is not made of these ports at all (layout/well-known-ports.ts).
      if (skippedByDefaultBand(source, p)) continue;
      report.considered++;
      if (p < host.unprivilegedStart && !privilegedOk) {
        report.excluded.privileged++;
        continue;
      }
      if (inRanges(p, ephemeralInSource)) {
        report.excluded.ephemeral++;
        continue;
      }
      const row = busy.get(p);
      if (row !== undefined) {
        const entry = inUseEntry(p, row, row.inode !== 0 ? host.owners?.get(row.inode)?.[0] : undefined);
        // A port its service bound and berth leased afterwards (a learned port): say both.
        const lease = input.leased?.get(p);
        if (lease !== undefined && lease.pending === undefined && lease.name !== undefined) entry.leasedAs = lease.name;
        report.excluded.inUse.push(entry);
        continue;
      }
      const lease = input.leased?.get(p);
      if (lease !== undefined) {
        const pid = lease.pending !== undefined ? lease.pending.pid : lease.pid;
        report.excluded.leased.push({
          port: p,
          ...(lease.pending !== undefined ? { kind: 'pending' as const } : {}),
          ...(pid !== undefined ? { pid } : {}),
          ...(lease.name !== undefined ? { name: lease.name } : {}),
          ...(lease.uid !== undefined ? { uid: lease.uid } : {}),
        });
        continue;
      }
      candidates.push(p);
    }
  }
  if (input.strategy === 'random') shuffle(candidates, input.rng ?? Math.random);
  return { candidates, report, ranges, ephemeralInSource };
}
