import type net from 'node:net';
import { BerthError, EXIT } from '../errors.js';
import type { SocketRow } from '../host/types.js';
import { inRanges } from '../host/intervals.js';
import { findSocketOwners } from '../host/owners.js';
import { processStartTime } from '../host/proc-stat.js';
import { readHostMap } from '../host/read-host.js';
import { explainUnavailable } from './explain.js';
import { closeServer, holdPort, serverFd, type HoldError } from './hold.js';
import { newLeaseRecord } from './lease-record.js';
import { acquireLease, leaseStillOurs, removeOwnLease, scanLeaseDir, type LeaseIdentity } from './lease-store.js';
import { busyPorts, planCandidates, sourceRanges, type Plan } from './plan.js';
import { resolveReserveOptions } from './reserve-options.js';
import { openStateDir, resolveStateDir } from './state-dir.js';
import type { AllocationReport, Lease, PortSource, Reservation, ReserveOptions } from './types.js';

/** Lease lifetime when there is no owner pid and no explicit ttl. */
export const DEFAULT_TTL_MS = 10 * 60_000;

/** In-use rows whose owners are looked up for the message (each lookup walks /proc/<pid>/fd). */
const OWNERS_SHOWN = 5;

function usage(msg: string): BerthError {
  return new BerthError(EXIT.USAGE, msg);
}

const isPort = (p: number) => Number.isInteger(p) && p >= 1 && p <= 65535;

function checkSource(s: PortSource): void {
  if (s.kind === 'port') {
    if (!isPort(s.port)) throw usage(`port ${s.port} is not a port number 1-65535`);
    return;
  }
  const { lo, hi } = s.range;
  if (!isPort(lo) || !isPort(hi) || lo > hi) throw usage(`range ${lo}-${hi} is not a range LO-HI of ports 1-65535 with LO <= HI`);
}

interface Taken {
  lease: Lease;
  id: LeaseIdentity;
  /** The hold; undefined once closed. */
  server: net.Server | undefined;
}

class HeldReservation implements Reservation {
  readonly ports: number[];
  readonly leases: Lease[];
  readonly report: AllocationReport;
  private readonly taken: Taken[];
  private releasing: Promise<void> | undefined;

  constructor(taken: Taken[], report: AllocationReport) {
    this.taken = taken;
    this.ports = taken.map((t) => t.lease.port);
    this.leases = taken.map((t) => t.lease);
    this.report = report;
  }

  holdFd(port: number): number | undefined {
    const s = this.taken.find((t) => t.lease.port === port)?.server;
    return s === undefined ? undefined : serverFd(s);
  }

  async unhold(port?: number): Promise<void> {
    await Promise.all(
      this.taken
        .filter((t) => port === undefined || t.lease.port === port)
        .map(async (t) => {
          const s = t.server;
          t.server = undefined;
          if (s) await closeServer(s);
        }),
    );
  }

  release(): Promise<void> {
    // Idempotent, also when called again before the first call finished.
    this.releasing ??= (async () => {
      await this.unhold();
      for (const t of this.taken) await removeOwnLease(t.lease.path, t.id);
    })();
    return this.releasing;
  }
}

/** Look up owners of the first few in-use rows so the message can name them. */
function addOwners(plan: Plan, procRoot: string, busy: Map<number, SocketRow>): void {
  const shown = plan.report.excluded.inUse.slice(0, OWNERS_SHOWN);
  const inodes = new Set<number>();
  for (const u of shown) {
    const ino = busy.get(u.port)?.inode;
    if (ino !== undefined && ino !== 0) inodes.add(ino);
  }
  if (inodes.size === 0) return;
  const owners = findSocketOwners(procRoot, inodes);
  for (const u of shown) {
    const o = owners.get(busy.get(u.port)?.inode ?? 0)?.[0];
    if (o === undefined) continue;
    u.pid = o.pid;
    u.command = o.cmdline.length > 0 ? o.cmdline.join(' ') : o.comm;
  }
}

/**
 * Start times looked up once per pid for one reserve() call: under contention the same
 * few owners hold most leases. Safe to keep for the call's few milliseconds: a pid seen
 * alive that dies meanwhile only makes us skip a port, and a dead pid cannot come back
 * with the same start time.
 */
function memoStartTime(): (pid: number) => number | undefined {
  const seen = new Map<number, number | undefined>();
  return (pid) => {
    if (seen.has(pid)) return seen.get(pid);
    const t = processStartTime(pid);
    seen.set(pid, t);
    return t;
  };
}

/**
 * Lease and hold `count` distinct ports of a source, all or none (design.md §2
 * Reservation). Throws BerthError 69 explaining every excluded port, 74 when the lease
 * directory is unusable, 64 for bad options.
 */
export async function reserve(options: ReserveOptions): Promise<Reservation> {
  // Without a source, the default band, like `berth port` (reserve-options.ts).
  const opts = await resolveReserveOptions(options);
  const count = opts.count ?? 1;
  if (!Number.isInteger(count) || count < 1) throw usage(`count ${count}: expected a whole number >= 1`);
  checkSource(opts.source);
  if (opts.ttlMs !== undefined && !(Number.isFinite(opts.ttlMs) && opts.ttlMs > 0)) throw usage(`ttl ${opts.ttlMs}ms: expected a positive duration`);
  let owner: { pid: number; start: number } | undefined;
  if (opts.ownerPid !== undefined) {
    const start = Number.isInteger(opts.ownerPid) && opts.ownerPid > 0 ? processStartTime(opts.ownerPid) : undefined;
    if (start === undefined) throw usage(`owner pid ${opts.ownerPid} is not a running process; the lease would be stale at once`);
    owner = { pid: opts.ownerPid, start };
  }
  const procRoot = opts.procRoot ?? '/proc';

  const srcRanges = sourceRanges(opts.source);
  // Only the source's rows: the planner looks at nothing else, and skipping the rest of a
  // busy node's table early is most of the parse (every row on those ports is kept).
  const host = readHostMap({ procRoot, localPorts: srcRanges });
  const dir = openStateDir(opts.stateDir ?? resolveStateDir(), host.netns);
  const store = { startTimeOf: memoStartTime() };
  const scan = scanLeaseDir(dir, { ...store, portFilter: (p) => inRanges(p, srcRanges) });
  const leased = new Map<number, { pid?: number; name?: string }>();
  for (const l of scan.leases) if (l.live) leased.set(l.port, l);
  const plan = planCandidates({
    source: opts.source,
    host,
    leased,
    allowEphemeral: opts.allowEphemeral === true,
    allowPrivileged: opts.allowPrivileged === true,
    isRoot: process.geteuid?.() === 0,
    strategy: opts.strategy ?? 'lowest',
  });
  const report = plan.report;
  const now = Date.now();
  const expiresAt = opts.ttlMs !== undefined ? now + opts.ttlMs : owner === undefined ? now + DEFAULT_TTL_MS : undefined;

  const taken: Taken[] = [];
  const giveBack = async () => {
    for (const t of taken) {
      if (t.server) await closeServer(t.server);
      await removeOwnLease(t.lease.path, t.id);
    }
  };
  try {
    for (const port of plan.candidates) {
      // Too few candidates: fail before touching anything.
      if (taken.length === count || plan.candidates.length < count) break;
      const record = newLeaseRecord({
        port,
        netns: host.netns,
        ...(owner ? { owner } : {}),
        ...(expiresAt !== undefined ? { expiresAt } : {}),
        ...(opts.name !== undefined ? { name: opts.name } : {}),
        now: Date.now(),
        createdBy: process.pid,
      });
      const got = await acquireLease(dir, record, store);
      if (!got.ok) {
        if (got.reason === 'leased') {
          const e: AllocationReport['excluded']['leased'][number] = { port };
          if (got.holder?.pid !== undefined) e.pid = got.holder.pid;
          if (got.holder?.name !== undefined) e.name = got.holder.name;
          report.excluded.leased.push(e);
        } else report.excluded.raced.push({ port, reason: 'lease taken concurrently' });
        continue;
      }
      let server: net.Server;
      try {
        server = await holdPort(port, host.ipv6);
      } catch (e) {
        await removeOwnLease(got.lease.path, got.id);
        report.excluded.bindFailed.push({ port, code: (e as HoldError).code ?? 'UNKNOWN' });
        continue;
      }
      // A reclaimer that judged an older file may have moved ours aside; we only keep a
      // port whose lease file is ours once we hold it (see lease-store.ts).
      if (!(await leaseStillOurs(got.lease.path, got.id))) {
        await closeServer(server);
        await removeOwnLease(got.lease.path, got.id); // in case it came back meanwhile
        report.excluded.raced.push({ port, reason: 'lease replaced while binding' });
        continue;
      }
      taken.push({ lease: got.lease, id: got.id, server });
    }
  } catch (e) {
    await giveBack();
    throw e;
  }

  if (taken.length < count) {
    const got = taken.length;
    await giveBack();
    addOwners(plan, procRoot, busyPorts(host.sockets, plan.ranges));
    const message = explainUnavailable({ report, needed: count, usable: plan.candidates.length, got, ranges: plan.ranges, ephemeralInSource: plan.ephemeralInSource, host });
    throw new BerthError(EXIT.UNAVAILABLE, message, report as unknown as Record<string, unknown>);
  }
  const reservation = new HeldReservation(taken, report);
  // Bound above all the same: the allocator never returns a port it could not hold.
  if (opts.hold === false) await reservation.unhold();
  return reservation;
}
