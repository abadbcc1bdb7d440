import { currentLeases, type ListedLease } from '../allocate/lease-list.js';
import { cleanText } from '../util/clean-text.js';
import { procRoot } from './env.js';
import { readPidns } from '../host/proc-facts.js';

/** Leases for doctor/inspect; a report must not fail because the lease table is unreadable. */
export function readLeasesForReport(): ListedLease[] {
  try {
    // A report's "live" is committed: a port name without a record is a set in progress.
    return currentLeases({ procRoot: procRoot(), holders: false }).map((l) => ({ ...l, live: l.state === 'live' }));
  } catch {
    return [];
  }
}

let ownNs: number | undefined | null = null;
function ownPidns(): number | undefined {
  if (ownNs === null) ownNs = readPidns(procRoot(), 'self');
  return ownNs;
}

export function leaseOwnerText(l: ListedLease): string {
  const parts: string[] = [];
  if (l.state === 'pending') parts.push(l.createdBy > 0 ? `being allocated by berth pid ${l.createdBy}` : 'being allocated (allocator not named)');
  // A pid of another PID namespace (a container's) is not the process of that number here.
  if (l.pid !== undefined) parts.push(l.pidns !== undefined && l.pidns !== ownPidns() ? `owner pid ${l.pid} of another PID namespace` : `owner pid ${l.pid}`);
  if (l.expiresAt !== undefined) {
    const left = Math.round((l.expiresAt - Date.now()) / 1000);
    parts.push(left >= 0 ? `expires in ${left}s` : `expiring (${-left}s past)`);
  }
  if (l.slurmJobId) parts.push(`job ${cleanText(l.slurmJobId)}${l.slurmStepId ? `.${cleanText(l.slurmStepId)}` : ''}`);
  return parts.join(', ');
}

/** "1234 (tail …)": the processes holding a lease, where visible. */
export function leaseHolderText(l: ListedLease): string {
  const hs = l.holders ?? [];
  if (hs.length === 0) return l.state === 'pending' ? '' : 'not visible';
  return hs.map((h) => String(h.pid)).join(',');
}

/** One row of the `berth leases` table: a lease, or a run of leases made together. */
export interface LeaseRow {
  /** "20100" or "20100-20131". */
  ports: string;
  /** The first lease of the run (the others differ only in port). */
  lease: ListedLease;
  count: number;
}

/** Leases of one request share their record; a set in progress shares its allocator. */
function sameAllocation(a: ListedLease, b: ListedLease): boolean {
  if (a.state !== b.state || a.uid !== b.uid) return false;
  if (a.state === 'pending') return a.createdBy === b.createdBy;
  return a.record === b.record;
}

/** Consecutive ports leased together as one row (a 1000-port block is one line); `leases` is sorted by port. */
export function leaseRows(leases: readonly ListedLease[]): LeaseRow[] {
  const rows: LeaseRow[] = [];
  let last: ListedLease | undefined;
  for (const l of leases) {
    const row = rows[rows.length - 1];
    if (row !== undefined && last !== undefined && l.port === last.port + 1 && sameAllocation(row.lease, l)) {
      row.count++;
      row.ports = `${row.lease.port}-${l.port}`;
    } else rows.push({ ports: String(l.port), lease: l, count: 1 });
    last = l;
  }
  return rows;
}
