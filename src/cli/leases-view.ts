import { currentLeases, type scanLeases } from '../allocate/leases.js';
import { isBlocking } from '../allocate/lease-record.js';
import type { ListedLease } from '../allocate/lease-store.js';
import { userText } from '../util/user-name.js';
import { procRoot } from './env.js';

/** Leases for doctor/inspect; a report must not fail because the state dir is unusable. */
export function readLeasesForReport(): ListedLease[] {
  try {
    return currentLeases({ procRoot: procRoot() });
  } catch {
    return [];
  }
}

export function leaseOwnerText(l: ListedLease): string {
  const parts: string[] = [];
  if (l.pending !== undefined && l.state === 'pending') parts.push(`being allocated by pid ${l.pending.pid}`);
  if (l.pid !== undefined) parts.push(`pid ${l.pid}`);
  if (l.expiresAt !== undefined) {
    const left = Math.round((l.expiresAt - Date.now()) / 1000);
    parts.push(left >= 0 ? `expires in ${left}s` : `expired ${-left}s ago`);
  }
  if (l.slurmJobId) parts.push(`job ${l.slurmJobId}${l.slurmStepId ? `.${l.slurmStepId}` : ''}`);
  return parts.join(', ');
}

const WHY: Record<string, string> = {
  invalid: 'not a valid lease',
  'not-a-file': 'not a regular file (a symlink, FIFO, socket or device)',
  directory: 'a directory',
  'too-large': 'too large to be a lease',
  unreadable: 'not readable by you',
};

/**
 * What a reader of `berth leases` should know beyond the table: stale leases and garbage
 * files berth cannot remove for this user (another user's, in a sticky directory), and a
 * shared directory owned by another non-root user (who can remove anyone's leases).
 */
export function leaseNotes(scan: ReturnType<typeof scanLeases>): string[] {
  const me = process.getuid?.() ?? 0;
  const notes: string[] = [];
  for (const d of scan.dir.foreignOwners) {
    notes.push(
      `warning: ${d.path} is owned by ${userText(d.uid)}, not by root: that user can remove or replace anyone's leases there. ` +
        `Ask root to make it at boot ('d /tmp/berth 1777 root root -' in /etc/tmpfiles.d/berth.conf) or to run: chown root:root ${d.path}`,
    );
  }
  if (me === 0) return notes; // root can remove anything: the next allocation or 'berth release' will
  for (const l of scan.leases) {
    if (l.uid === me || isBlocking(l.state)) continue;
    const expiry = l.expiresAt !== undefined ? `it expires ${new Date(l.expiresAt).toISOString()}` : 'it never expires by itself';
    notes.push(`port ${l.port}: a stale (${l.state}) lease of ${userText(l.uid)} blocks the port; only that user or root can remove it (berth release --port ${l.port}); ${expiry}`);
  }
  for (const g of scan.garbage) {
    if (g.uid === me) continue;
    notes.push(`port ${g.port}: ${g.path} of ${userText(g.uid)} is ${WHY[g.why] ?? g.why}; the port is not handed out until that user or root removes it (berth release --port ${g.port})`);
  }
  return notes;
}

/** One row of the `berth leases` table: a lease, or a run of leases made together. */
export interface LeaseRow {
  /** "20100" or "20100-20131". */
  ports: string;
  /** The first lease of the run (the others differ only in port). */
  lease: ListedLease;
  count: number;
}

/** Leases of one allocation share all of this; a block's ports differ only in port. */
function sameAllocation(a: ListedLease, b: ListedLease): boolean {
  return (
    a.state === b.state &&
    a.uid === b.uid &&
    a.pid === b.pid &&
    a.pidStart === b.pidStart &&
    a.expiresAt === b.expiresAt &&
    a.name === b.name &&
    a.createdAt === b.createdAt &&
    a.createdBy === b.createdBy &&
    a.slurmJobId === b.slurmJobId &&
    a.slurmStepId === b.slurmStepId &&
    a.pending?.set === b.pending?.set
  );
}

/**
 * Consecutive ports leased together (a block, or a --count run that came out contiguous)
 * as one row: a 1000-port Ray worker block is one line, not a thousand. `leases` is sorted
 * by port (scanLeases).
 */
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
