import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { findSocketOwners, parseCmdline, socketsHeldBy } from '../host/owners.js';
import { tryRead } from '../host/proc-read.js';
import { readPidns } from '../host/proc-facts.js';
import { readHostMap } from '../host/read-host.js';
import type { HostMap, PortRange } from '../host/host-map.js';
import { allocatorsByPort, recordsByPort } from './lease-cover.js';
import type { LeaseTable } from './lease-table.js';
import { busyPorts, type Plan } from './plan.js';
import type { BlockPlan } from './plan-block.js';

/*
 * What an allocation knows of the ports in its way: each port's lease (a port name without a
 * record is a set in progress), and after a failure who the competitors are.
 */

export interface KnownLease {
  /** The owner pid (or, without one, the allocator's). */
  pid?: number;
  name?: string;
  uid?: number;
  /** A set still being allocated: the allocator, when its name says. */
  pending?: { pid?: number };
  createdBy?: number;
  /** The owner the record names (`--owner`), not the allocator standing in for one. */
  owner?: number;
  inode?: number;
}

/** The leases of `table` on ports that `wanted` accepts, by port. */
export function knownLeases(table: LeaseTable, wanted: (port: number) => boolean, self?: { uid: number; pid: number }): Map<number, KnownLease> {
  const out = new Map<number, KnownLease>();
  if (table.ports.size === 0) return out;
  const byPort = recordsByPort(table, wanted);
  const pending = allocatorsByPort(
    table,
    [...table.ports.keys()].filter((p) => wanted(p) && !byPort.has(p)),
    self && ((c) => c.pid === self.pid && c.uid === self.uid),
  );
  for (const port of table.ports.keys()) {
    if (!wanted(port)) continue;
    const r = byPort.get(port);
    if (r !== undefined) {
      // No owner: the allocator holds it itself (run/up), unless it lives by its expiry alone.
      const owner = r.owner ?? (r.expiresAt === undefined ? r.pid : undefined);
      out.set(port, {
        createdBy: r.pid,
        uid: r.uid,
        ...(owner !== undefined ? { pid: owner } : {}),
        ...(r.owner !== undefined ? { owner: r.owner } : {}),
        inode: table.ports.get(port)![0]!,
        ...(r.name !== undefined ? { name: r.name } : {}),
      });
      continue;
    }
    const a = pending.get(port);
    out.set(port, a === undefined ? { pending: {} } : { pending: { pid: a.pid }, uid: a.uid });
  }
  return out;
}

/** In-use rows whose owners are looked up for the message (each lookup walks /proc/<pid>/fd). */
const OWNERS_SHOWN = 5;

export interface Attempt {
  host: HostMap;
  /** Leases found at the start, by port. */
  leases: Map<number, KnownLease>;
}

export interface Failure {
  request: number;
  plan: Plan;
  got: number;
  attempt: Attempt;
  /** A block request: its run plan (the longest free run goes into the message). */
  block?: BlockPlan;
  /** Usable ports the set's earlier requests took. */
  own?: number[];
}

function commandOf(procRoot: string, pid: number): string | undefined {
  const argv = parseCmdline(tryRead(join(procRoot, String(pid), 'cmdline')) ?? '');
  return argv.length > 0 ? argv.join(' ') : undefined;
}

/**
 * Name the competitors of a failed request (owners, sockets closed since, holders' commands). A socket on
 * a port whose lease is a set in progress is that allocator's hold (transient), even when its owner is not visible.
 */
export function nameCompetitors(f: Failure, procRoot: string): void {
  const x = f.plan.report.excluded;
  const busy = busyPorts(f.attempt.host.sockets, f.plan.ranges);
  const rows = x.inUse.filter((u, i) => i < OWNERS_SHOWN || f.attempt.leases.has(u.port));
  const inodes = new Set<number>();
  for (const u of rows) {
    const ino = busy.get(u.port)?.inode;
    if (ino !== undefined && ino !== 0) inodes.add(ino);
  }
  const owners = inodes.size > 0 ? findSocketOwners(procRoot, inodes) : new Map();
  const unowned: number[] = [];
  for (const u of rows) {
    const lease = f.attempt.leases.get(u.port);
    if (lease?.pending !== undefined) {
      u.heldByBerth = true;
      u.inProgress = true;
      if (lease.pending.pid !== undefined) u.pid = lease.pending.pid;
    }
    const ino = busy.get(u.port)?.inode ?? 0;
    if (ino === 0) continue;
    const list = (owners.get(ino) ?? []) as { pid: number; comm: string; cmdline: string[] }[];
    if (list.length === 0) {
      if (!u.heldByBerth) unowned.push(u.port);
      continue;
    }
    const holders = lease === undefined ? [] : [lease.pending?.pid, lease.createdBy, lease.pid];
    const o = list.find((p) => holders.includes(p.pid)) ?? list[0]!;
    u.pid = o.pid;
    u.command = o.cmdline.length > 0 ? o.cmdline.join(' ') : o.comm;
    // The lease's allocator holding its own port: a hold, given up (or handed to a service) shortly.
    if (lease !== undefined && (o.pid === lease.createdBy || o.pid === lease.pending?.pid) && socketsHeldBy(procRoot, o.pid, new Set([ino])).size > 0)
      u.heldByBerth = true;
  }
  if (unowned.length > 0) {
    const now = readHostMap({ procRoot, localPorts: unowned.map((p) => ({ lo: p, hi: p })) });
    const still = new Set(now.sockets.map((r) => r.inode));
    for (const u of rows) if (unowned.includes(u.port) && !still.has(busy.get(u.port)?.inode ?? 0)) u.closedSince = true;
  }
  for (const l of x.leased.slice(0, OWNERS_SHOWN)) {
    const c = l.pid === undefined ? undefined : commandOf(procRoot, l.pid);
    if (c !== undefined) l.command = c;
  }
  markGoneOwners(f, procRoot);
}

/**
 * Mark the leases whose recorded owner no longer exists: their holder is about to end them. A pid
 * means nothing outside its PID namespace: a lease whose holder lives in another one stays taken.
 */
function markGoneOwners(f: Failure, procRoot: string): void {
  const gone = f.plan.report.excluded.leased.filter((l) => {
    const k = f.attempt.leases.get(l.port);
    return k?.owner !== undefined && k.pending === undefined && !existsSync(join(procRoot, String(k.owner)));
  });
  if (gone.length === 0) return;
  const inodes = new Set(gone.map((l) => f.attempt.leases.get(l.port)!.inode!));
  const holders = findSocketOwners(procRoot, inodes);
  const ours = readPidns(procRoot, 'self');
  for (const l of gone) {
    const list = holders.get(f.attempt.leases.get(l.port)!.inode!) ?? [];
    if (!list.some((h) => readPidns(procRoot, h.pid) !== ours)) l.ownerGone = true;
  }
}

/** The hull of some ranges, for the allocator's name. */
export function hull(ranges: readonly PortRange[]): PortRange {
  let lo = 65535;
  let hi = 1;
  for (const r of ranges) {
    lo = Math.min(lo, r.lo);
    hi = Math.max(hi, r.hi);
  }
  return lo <= hi ? { lo, hi } : { lo: 1, hi: 1 };
}
