import { findSocketOwners } from '../host/owners.js';
import { readNetns } from '../host/read-host.js';
import type { SocketOwner } from '../host/host-map.js';
import { readLeaseTable } from './lease-domain.js';
import { readProcFacts } from '../host/proc-facts.js';
import { splitHolders, type HoldingProc } from './release-plan.js';
import { allocatorsByPort, recordsByPort } from './lease-cover.js';
import type { ParsedRecord } from './lease-record.js';
import type { LeaseTable } from './lease-table.js';
import type { Lease } from './allocation-types.js';

/*
 * The leases of this network namespace as people see them (berth leases, release, doctor): each
 * port name with what its record says (a label) and the processes holding it where /proc shows them.
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
  /** The PID namespace (inode) the record says its owner pid is numbered in: a label. */
  pidns?: number;
  /** Processes holding the port's name, where visible. */
  holders?: { pid: number; command: string; holder: boolean }[];
}

export interface LeaseListOptions {
  /** Where processes are looked up for holders (default '/proc'); the table is always this namespace's. */
  procRoot?: string;
  /** Look up the holding processes (walks /proc/<pid>/fd). Default true. */
  holders?: boolean;
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
      out.push({
        ...toLease(port, r, netns),
        uid: r.uid,
        state: 'live',
        live: true,
        inode,
        record: r.id,
        ...(r.set !== undefined ? { set: r.set } : {}),
        ...(r.pidns !== undefined ? { pidns: r.pidns } : {}),
      });
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
  const facts = new Map<number, HoldingProc>();
  const factsOf = (o: SocketOwner): HoldingProc => {
    let f = facts.get(o.pid);
    if (f === undefined) facts.set(o.pid, (f = readProcFacts(procRoot, o.pid) ?? { pid: o.pid, argv: o.cmdline }));
    return f;
  };
  for (const l of leases) {
    const list = owners.get(l.inode);
    if (!list) continue;
    // The tail a `timeout` holder runs (--owner with --ttl) is part of that holder, not a stranger.
    const { others } = splitHolders(list.map(factsOf));
    l.holders = list.map((o) => ({ pid: o.pid, command: holderText(o), holder: !others.some((x) => x.pid === o.pid) }));
  }
  return leases;
}

/** @deprecated The file store's scan: the leases, nothing else to report. */
export function scanLeases(opts: LeaseListOptions = {}): { leases: ListedLease[] } {
  return { leases: currentLeases(opts) };
}
