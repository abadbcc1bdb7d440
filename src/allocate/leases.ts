import { readNetns } from '../host/read-host.js';
import { listLeases, releaseLeasesIn, scanLeaseDir, type LeaseScan, type LeaseStoreOptions, type ListedLease, type ReleaseFilter, type ReleaseResult } from './lease-store.js';
import { openLeaseDir, resolveLeaseLocation, type LeaseDir, type LeaseLocation } from './state-dir.js';

/* Lease directory operations for the current network namespace (berth leases / release). */

export interface LeaseDirOptions {
  /** A private lease directory (one user's domain; for tests). */
  stateDir?: string;
  /** The shared lease root. Default: $BERTH_LEASE_DIR, else $BERTH_STATE_DIR (private), else /tmp/berth. */
  leaseDir?: string;
  /** /proc root for the namespace id; default '/proc'. */
  procRoot?: string;
}

export function leaseLocation(opts: LeaseDirOptions = {}): LeaseLocation {
  if (opts.stateDir !== undefined) return { root: opts.stateDir, shared: false };
  if (opts.leaseDir !== undefined) return { root: opts.leaseDir, shared: true };
  return resolveLeaseLocation();
}

/** The checked lease directory of this network namespace (created if missing). */
export function openLeases(opts: LeaseDirOptions = {}): LeaseDir {
  return openLeaseDir(leaseLocation(opts), readNetns(opts.procRoot ?? '/proc'));
}

/** The path to operate on in this namespace's lease directory (see LeaseDir.at). */
export function leaseDir(opts: LeaseDirOptions = {}): string {
  return openLeases(opts).at;
}

/** Leases of this namespace with liveness, by port. */
export function currentLeases(opts: LeaseDirOptions & LeaseStoreOptions = {}): ListedLease[] {
  return listLeases(leaseDir(opts), opts);
}

/** Leases and garbage files of this namespace, with the directory they are in. */
export function scanLeases(opts: LeaseDirOptions & LeaseStoreOptions = {}): LeaseScan & { dir: LeaseDir } {
  const dir = openLeases(opts);
  return { ...scanLeaseDir(dir.at, opts), dir };
}

/**
 * End the leases the caller targets ({ports}, {ownerPid}, {jobId} or {all}) and clean
 * stale ones; with no target, only cleans. Never removes an untargeted live lease, nor
 * another user's lease (unless root).
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
