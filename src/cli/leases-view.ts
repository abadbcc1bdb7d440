import { currentLeases } from '../allocate/leases.js';
import type { ListedLease } from '../allocate/lease-store.js';
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
  if (l.pid !== undefined) parts.push(`pid ${l.pid}`);
  if (l.expiresAt !== undefined) {
    const left = Math.round((l.expiresAt - Date.now()) / 1000);
    parts.push(left >= 0 ? `expires in ${left}s` : `expired ${-left}s ago`);
  }
  if (l.slurmJobId) parts.push(`job ${l.slurmJobId}${l.slurmStepId ? `.${l.slurmStepId}` : ''}`);
  return parts.join(', ');
}
