import { readNetns } from '../host/read-host.js';
import { listLeases, releaseLeasesIn, type LeaseStoreOptions, type ListedLease, type ReleaseFilter, type ReleaseResult } from './lease-store.js';
import { openStateDir, resolveStateDir } from './state-dir.js';

/* Lease directory operations for the current network namespace (berth leases / release). */

export interface LeaseDirOptions {
  /** Base directory override (else $BERTH_STATE_DIR, $XDG_RUNTIME_DIR/berth, /tmp/berth-<uid>). */
  stateDir?: string;
  /** /proc root for the namespace id; default '/proc'. */
  procRoot?: string;
}

/** The checked lease directory of this network namespace (created if missing). */
export function leaseDir(opts: LeaseDirOptions = {}): string {
  return openStateDir(opts.stateDir ?? resolveStateDir(), readNetns(opts.procRoot ?? '/proc'));
}

/** Leases of this namespace with liveness, by port. */
export function currentLeases(opts: LeaseDirOptions & LeaseStoreOptions = {}): ListedLease[] {
  return listLeases(leaseDir(opts), opts);
}

/**
 * End the leases the caller targets ({ports}, {ownerPid}, {jobId} or {all}) and clean
 * stale ones; with no target, only cleans. Never removes an untargeted live lease.
 */
export function releaseLeases(opts: ReleaseFilter & LeaseDirOptions & LeaseStoreOptions = {}): Promise<ReleaseResult> {
  const filter: ReleaseFilter = {};
  if (opts.ports !== undefined) filter.ports = opts.ports;
  if (opts.ownerPid !== undefined) filter.ownerPid = opts.ownerPid;
  if (opts.jobId !== undefined) filter.jobId = opts.jobId;
  if (opts.all !== undefined) filter.all = opts.all;
  return releaseLeasesIn(leaseDir(opts), filter, opts);
}

/** End every lease recorded for a Slurm job (e.g. from an epilog). */
export function releaseJob(jobId: string, opts: LeaseDirOptions & LeaseStoreOptions = {}): Promise<ReleaseResult> {
  return releaseLeasesIn(leaseDir(opts), { jobId }, opts);
}
