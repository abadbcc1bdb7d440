import { readPidns } from '../host/proc-facts.js';
import type { HolderSpec } from './lease-holder.js';
import type { RecordInfo } from './lease-record.js';

/* What a committed request leaves: its lease record, and a holder process when the lease must outlive us. */

/** How long a set's leases live. */
export interface LeaseLife {
  /** Owner of every lease: it lives while this pid lives (another process than ours: a holder process keeps it). */
  owner?: { pid: number; start?: number };
  /** The lease ends after this long (a holder process keeps it). */
  ttlMs?: number;
}

/** A holder process keeps the lease when it must outlive us: another process's or a ttl's. */
export function holderOf(o: LeaseLife): HolderSpec | undefined {
  const other = o.owner !== undefined && o.owner.pid !== process.pid;
  if (!other && o.ttlMs === undefined) return undefined;
  return {
    ...(o.owner !== undefined ? { ownerPid: o.owner.pid, ...(o.owner.start ? { ownerStart: o.owner.start } : {}) } : {}),
    ...(o.ttlMs !== undefined ? { ttlMs: o.ttlMs } : {}),
  };
}

export function recordOf(ports: number[], block: boolean, uid: number, o: LeaseLife, expiresAt: number | undefined, name?: string): RecordInfo {
  const env = process.env;
  // An owner pid means something only in its PID namespace: the record says which (a label; release reads the holder's own).
  const pidns = o.owner && o.owner.pid !== process.pid ? readPidns('/proc', 'self') : undefined;
  return {
    uid,
    pid: process.pid,
    // run/up own their leases themselves: an owner only when it is another process (fewer bytes: one name per record, mostly).
    ...(o.owner && o.owner.pid !== process.pid ? { owner: o.owner.pid, ...(pidns !== undefined ? { pidns } : {}) } : {}),
    ...(expiresAt !== undefined ? { expiresAt } : {}),
    ...(env.SLURM_JOB_ID ? { job: env.SLURM_JOB_ID } : {}),
    ...(env.SLURM_STEP_ID ? { step: env.SLURM_STEP_ID } : {}),
    kind: block ? 'block' : 'single',
    ports,
    ...(name !== undefined ? { name } : {}),
  };
}
