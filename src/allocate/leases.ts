import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findSocketOwners, parseCmdline, socketsHeldBy } from '../host/owners.js';
import { readNetns } from '../host/read-host.js';
import type { SocketOwner } from '../host/types.js';
import { readLeaseTable } from './lease-domain.js';
import { HOLDER_ARGV0 } from './lease-holder.js';
import { allocatorsByPort, recordsByPort } from './lease-cover.js';
import type { LeaseTable, ParsedRecord } from './lease-names.js';
import type { Lease } from './types.js';

/*
 * The leases of this network namespace as people see them (berth leases, release, doctor):
 * every port name of the lease domain with what its record says, and the processes that
 * hold it where /proc shows them (one's own; root: every process of this pid namespace).
 * Ending a lease is ending its holder: `berth release` signals only lease-holder processes
 * (lease-holder.ts) that hold the lease's socket right then, never a process a forged name
 * points at, and never berth run/up (their leases end with them: stop them).
 */

export type LeaseState = 'live' | 'pending';

export interface ListedLease extends Lease {
  /** The uid the lease's record (or its allocator's name) claims; undefined when nothing says. */
  uid?: number;
  /** live: its set is committed (a record names it); pending: a set still being allocated. */
  state: LeaseState;
  /** Always true: a listed lease blocks its port (kept for callers of the file store's listing). */
  live: boolean;
  /** Inode of the port's name (ss -xl and /proc/net/unix show it). */
  inode: number;
  /** Ports of one allocation share it. */
  set?: string;
  /** The record's id, shared by the ports of one request (a block, a --count run). */
  record?: string;
  /** Processes holding the port's name, where visible. */
  holders?: { pid: number; command: string; holder: boolean }[];
}

export interface LeaseListOptions {
  /** Where processes are looked up for holders (default '/proc'); the table is always this namespace's. */
  procRoot?: string;
  /** Look up the holding processes (walks /proc/<pid>/fd). Default true. */
  holders?: boolean;
  /** @deprecated Ignored: leases are the network namespace's (docs/leases.md), not files. Kept so old callers compile. */
  stateDir?: string;
  /** @deprecated Ignored, like BERTH_LEASE_DIR: there is no lease directory any more. */
  leaseDir?: string;
}

function toLease(port: number, r: ParsedRecord, netns: string): Lease {
  // No owner: the allocator holds it itself (run/up), unless it lives by its expiry alone.
  const owner = r.owner ?? (r.expiresAt === undefined ? r.pid : undefined);
  return {
    port,
    kind: r.kind,
    ...(owner !== undefined ? { pid: owner } : {}),
    ...(r.expiresAt !== undefined ? { expiresAt: r.expiresAt } : {}),
    ...(r.name !== undefined ? { name: r.name } : {}),
    ...(r.createdAt !== undefined ? { createdAt: r.createdAt } : {}),
    createdBy: r.pid,
    netns,
    ...(r.job !== undefined ? { slurmJobId: r.job } : {}),
    ...(r.step !== undefined ? { slurmStepId: r.step } : {}),
  };
}

/** The leases of a table, by port. Pure but for the namespace id. */
export function leasesOf(table: LeaseTable, netns: string): ListedLease[] {
  const byPort = recordsByPort(table);
  const pending = allocatorsByPort(table, [...table.ports.keys()].filter((p) => !byPort.has(p)));
  const out: ListedLease[] = [];
  for (const [port, inodes] of table.ports) {
    const inode = inodes[0]!;
    const r = byPort.get(port);
    if (r !== undefined) {
      out.push({ ...toLease(port, r, netns), uid: r.uid, state: 'live', live: true, inode, record: r.id, ...(r.set !== undefined ? { set: r.set } : {}) });
      continue;
    }
    const a = pending.get(port);
    out.push({ port, kind: 'single', createdBy: a?.pid ?? 0, netns, ...(a ? { uid: a.uid } : {}), state: 'pending', live: true, inode });
  }
  return out.sort((a, b) => a.port - b.port);
}

function holderText(o: SocketOwner): string {
  return o.cmdline.length > 0 ? o.cmdline.join(' ') : o.comm;
}

/** Leases of this network namespace, by port, with their holders where visible. */
export function currentLeases(opts: LeaseListOptions = {}): ListedLease[] {
  const procRoot = opts.procRoot ?? '/proc';
  const leases = leasesOf(readLeaseTable(), readNetns(procRoot));
  if (opts.holders === false || leases.length === 0) return leases;
  const owners = findSocketOwners(procRoot, new Set(leases.map((l) => l.inode)));
  for (const l of leases) {
    const list = owners.get(l.inode);
    if (list) l.holders = list.map((o) => ({ pid: o.pid, command: holderText(o), holder: o.cmdline[0] === HOLDER_ARGV0 }));
  }
  return leases;
}

/** @deprecated The file store's scan: the leases, nothing else to report. */
export function scanLeases(opts: LeaseListOptions = {}): { leases: ListedLease[] } {
  return { leases: currentLeases(opts) };
}

export interface ReleaseFilter {
  ports?: readonly number[];
  ownerPid?: number;
  jobId?: string;
  all?: boolean;
}

export interface ReleaseResult {
  /** Targeted leases ended (their holder is gone). */
  released: ListedLease[];
  /** Nothing to clean any more: always 0 (kept for callers). */
  cleaned: number;
  /** Targeted leases we may not end: another user's (not root), or held where we cannot see. */
  notOurs: { port: number; uid?: number; targeted: boolean; state: LeaseState | 'garbage'; why: 'other-user' | 'not-visible' }[];
  /** Targeted leases held by a process that is not a lease holder (berth run/up, a library caller): stop it to end them. */
  heldBy: { port: number; pid: number; command: string }[];
}

function targeted(l: ListedLease, f: ReleaseFilter, me: number): boolean {
  // "All" means all of one's own: root cleaning up must not end every user's live leases by accident.
  if (f.all) return l.uid === me;
  if (f.ports?.includes(l.port)) return true;
  if (f.ownerPid !== undefined && l.pid === f.ownerPid) return true;
  if (f.jobId !== undefined && l.slurmJobId === f.jobId) return true;
  return false;
}

function cmdline(procRoot: string, pid: number): string[] {
  try {
    return parseCmdline(readFileSync(join(procRoot, String(pid), 'cmdline'), 'utf8'));
  } catch {
    return [];
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * End the leases the caller targets ({ports}, {ownerPid}, {jobId} or {all}) by ending their
 * holder processes; a holder holds the whole set of one `berth port`, so the set's other
 * ports end too (they are listed in `released`). Only a lease-holder process that holds the lease's socket at that
 * moment is signalled (a pid that was reused holds no such socket), and only one's own
 * (root: anyone's). Waits up to a second for the names to go.
 */
export async function releaseLeases(opts: ReleaseFilter & LeaseListOptions = {}): Promise<ReleaseResult> {
  const procRoot = opts.procRoot ?? '/proc';
  const me = process.getuid?.() ?? 0;
  const root = process.geteuid?.() === 0;
  const result: ReleaseResult = { released: [], cleaned: 0, notOurs: [], heldBy: [] };
  const ending: ListedLease[] = [];
  const signalled = new Set<number>();
  const all = currentLeases({ procRoot });
  for (const l of all) {
    if (!targeted(l, opts, me)) continue;
    if (!root && l.uid !== me) {
      result.notOurs.push({ port: l.port, ...(l.uid !== undefined ? { uid: l.uid } : {}), targeted: true, state: l.state, why: 'other-user' });
      continue;
    }
    const holders = l.holders ?? [];
    const others = holders.filter((h) => !h.holder);
    if (holders.length === 0) {
      result.notOurs.push({ port: l.port, ...(l.uid !== undefined ? { uid: l.uid } : {}), targeted: true, state: l.state, why: 'not-visible' });
      continue;
    }
    if (others.length > 0) {
      result.heldBy.push({ port: l.port, pid: others[0]!.pid, command: others[0]!.command });
      continue;
    }
    for (const h of holders) {
      if (signalled.has(h.pid)) continue;
      // Still a holder of this very socket: the pid was not reused since the listing.
      if (cmdline(procRoot, h.pid)[0] !== HOLDER_ARGV0 || socketsHeldBy(procRoot, h.pid, new Set([l.inode])).size === 0) continue;
      try {
        process.kill(h.pid, 'SIGTERM');
        signalled.add(h.pid);
      } catch {
        // gone meanwhile, or not ours to signal
      }
    }
    ending.push(l);
  }
  // A holder holds its whole set (one berth port call): every lease it held ends with it.
  for (const l of all) if (!ending.includes(l) && (l.holders ?? []).some((h) => signalled.has(h.pid))) ending.push(l);
  const deadline = Date.now() + 1000;
  let left = ending;
  while (left.length > 0) {
    const bound = new Set(currentLeases({ procRoot, holders: false }).map((l) => `${l.port}/${l.inode}`));
    const still = left.filter((l) => bound.has(`${l.port}/${l.inode}`));
    for (const l of left) if (!still.includes(l)) result.released.push(l);
    left = still;
    if (left.length === 0 || Date.now() >= deadline) break;
    await sleep(20);
  }
  for (const l of left) result.notOurs.push({ port: l.port, ...(l.uid !== undefined ? { uid: l.uid } : {}), targeted: true, state: l.state, why: 'not-visible' });
  result.released.sort((a, b) => a.port - b.port);
  return result;
}

/** End every lease recorded for a Slurm job (e.g. from an epilog). */
export function releaseJob(jobId: string, opts: LeaseListOptions = {}): Promise<ReleaseResult> {
  return releaseLeases({ ...opts, jobId });
}
