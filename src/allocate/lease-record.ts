import type { LeaseRecord } from './types.js';

/*
 * Lease records as data: building, validating and judging liveness. Pure: the clock and
 * the process table come in as arguments so the rules are tested without processes.
 */

/** pid -> field 22 of /proc/<pid>/stat, undefined when there is no such process. */
export type StartTimeOf = (pid: number) => number | undefined;

/**
 * Why a lease is or is not live. 'live' and 'pending' block the port; every other state
 * may be reclaimed (by its file's owner or root: the shared directory is sticky).
 * 'pending': part of a set still being allocated, by a live allocator. 'abandoned': part
 * of a set whose allocator died before the set was complete (see lease-store.ts, "Sets").
 */
export type LeaseState = 'live' | 'pending' | 'expired' | 'owner-gone' | 'pid-reused' | 'abandoned' | 'garbage';

/** States that block the port: the lease may not be reclaimed. */
export const isBlocking = (s: LeaseState): boolean => s === 'live' || s === 'pending';

/** Has the set with this token been committed? (Its marker file exists; see lease-store.ts.) */
export type SetCommitted = (set: string) => boolean;

/** Set tokens: letters, digits, dashes; they name a marker file. */
const SET_TOKEN = /^[A-Za-z0-9-]{1,64}$/;

const isInt = (v: unknown, min: number, max = Number.MAX_SAFE_INTEGER): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
const isTime = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const isStr = (v: unknown): v is string => typeof v === 'string';

/**
 * The record in a lease file's text, or undefined when it is not a valid lease (then the
 * file is garbage and reclaimable). Files are complete when visible (temp + link), so
 * "unparseable" never means "still being written".
 */
export function parseLeaseRecord(text: string, expectedPort?: number): LeaseRecord | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  if (!isInt(o.port, 1, 65535)) return undefined;
  if (expectedPort !== undefined && o.port !== expectedPort) return undefined;
  if (!isTime(o.createdAt) || !isInt(o.createdBy, 1) || !isStr(o.netns)) return undefined;
  const rec: LeaseRecord = { port: o.port, createdAt: o.createdAt, createdBy: o.createdBy, netns: o.netns };
  if (o.pid !== undefined) {
    // Without the start time a reused pid would pass for the owner: not a usable lease.
    if (!isInt(o.pid, 1) || !isInt(o.pidStart, 0)) return undefined;
    rec.pid = o.pid;
    rec.pidStart = o.pidStart;
  }
  if (o.expiresAt !== undefined) {
    if (!isTime(o.expiresAt)) return undefined;
    rec.expiresAt = o.expiresAt;
  }
  // A lease with neither owner nor expiry could never be reclaimed.
  if (rec.pid === undefined && rec.expiresAt === undefined) return undefined;
  if (o.pending !== undefined) {
    const p = o.pending as Record<string, unknown> | null;
    if (typeof p !== 'object' || p === null || !isInt(p.pid, 1) || !isInt(p.pidStart, 0) || !isStr(p.set) || !SET_TOKEN.test(p.set)) return undefined;
    rec.pending = { pid: p.pid, pidStart: p.pidStart, set: p.set };
  }
  if (o.name !== undefined) {
    if (!isStr(o.name)) return undefined;
    rec.name = o.name;
  }
  if (o.slurmJobId !== undefined) {
    if (!isStr(o.slurmJobId)) return undefined;
    rec.slurmJobId = o.slurmJobId;
  }
  if (o.slurmStepId !== undefined) {
    if (!isStr(o.slurmStepId)) return undefined;
    rec.slurmStepId = o.slurmStepId;
  }
  return rec;
}

/**
 * A pending lease belongs to its allocator until the set is committed. The allocator is
 * asked first, the marker second: an allocator that commits and then dies has made its
 * marker before dying, so a reader that finds it dead also finds the marker. A marker
 * found while the allocator lives commits the lease too: the leases of a block stay
 * `pending` with their set's marker kept for their life (lease-store.ts, "Sets").
 */
export function leaseState(record: LeaseRecord | undefined, now: number, startTimeOf: StartTimeOf, committed: SetCommitted = () => false): LeaseState {
  if (record === undefined) return 'garbage';
  if (record.expiresAt !== undefined && now >= record.expiresAt) return 'expired';
  if (record.pending !== undefined) {
    if (startTimeOf(record.pending.pid) === record.pending.pidStart) {
      if (!committed(record.pending.set)) return 'pending';
    } else if (!committed(record.pending.set)) return 'abandoned';
  }
  if (record.pid !== undefined) {
    const start = startTimeOf(record.pid);
    if (start === undefined) return 'owner-gone';
    if (start !== record.pidStart) return 'pid-reused';
  } else if (record.expiresAt === undefined) {
    return 'garbage';
  }
  return 'live';
}

/** Owner alive with the same start time, expiry (if any) not passed, and the set (if any) complete. */
export function leaseIsLive(record: LeaseRecord | undefined, now: number, startTimeOf: StartTimeOf, committed?: SetCommitted): boolean {
  return leaseState(record, now, startTimeOf, committed) === 'live';
}

export interface NewLeaseInput {
  port: number;
  netns: string;
  /** Owner pid and its start time (already looked up by the caller). */
  owner?: { pid: number; start: number };
  /** Absolute expiry, ms since epoch. Required when there is no owner. */
  expiresAt?: number;
  name?: string;
  /** The allocator and set token while the set is incomplete. */
  pending?: { pid: number; pidStart: number; set: string };
  now: number;
  createdBy: number;
  env?: NodeJS.ProcessEnv;
}

export function newLeaseRecord(i: NewLeaseInput): LeaseRecord {
  if (i.owner === undefined && i.expiresAt === undefined) {
    throw new Error('a lease without an owner pid must have an expiry');
  }
  // Key order is for humans reading the file: who, until when, then provenance.
  const rec: LeaseRecord = {
    port: i.port,
    ...(i.owner !== undefined ? { pid: i.owner.pid, pidStart: i.owner.start } : {}),
    ...(i.expiresAt !== undefined ? { expiresAt: i.expiresAt } : {}),
    ...(i.name !== undefined ? { name: i.name } : {}),
    ...(i.pending !== undefined ? { pending: { ...i.pending } } : {}),
    createdAt: i.now,
    createdBy: i.createdBy,
    netns: i.netns,
  };
  const env = i.env ?? process.env;
  if (env.SLURM_JOB_ID) rec.slurmJobId = env.SLURM_JOB_ID;
  if (env.SLURM_STEP_ID) rec.slurmStepId = env.SLURM_STEP_ID;
  return rec;
}
