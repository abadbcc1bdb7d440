import type { ChildProcess } from 'node:child_process';
import { BerthError, EXIT } from '../errors.js';
import { bindName, closeName, type NameHold } from './lease-domain.js';
import { endHolder, spawnHolder, type HolderSpec } from './lease-holder.js';
import { processStartTime } from '../host/proc-stat.js';
import { allocatorName, randomId } from './lease-protocol.js';
import { recordNames, type RecordInfo } from './lease-record.js';
import { HeldReservation, type HoldShape, type Taken } from './held-reservation.js';
import { serverFd } from './hold-socket.js';
import type { AllocationReport } from './allocation-types.js';

/*
 * Committing a set: one record per request, and a holder process for a lease that must outlive us
 * (--owner of another process, --ttl). Until its record exists a port's name is "a set in
 * progress": other allocators retry rather than fail.
 */

/** Bind a record's names; a clash of the random id with a live record is retried with another. */
export async function bindRecord(info: RecordInfo): Promise<NameHold[]> {
  for (let tries = 0; tries < 5; tries++) {
    const names = recordNames(info, randomId(10));
    const bound: NameHold[] = [];
    try {
      for (const name of names) {
        const h = await bindName(name);
        if (h === undefined) break;
        bound.push(h);
      }
    } catch (e) {
      await Promise.all(bound.map(closeName));
      throw e;
    }
    if (bound.length === names.length) return bound;
    await Promise.all(bound.map(closeName));
  }
  throw new BerthError(EXIT.SOFTWARE, 'cannot bind a lease record: its names were taken five times over (someone binds berth/v1/r/ names on purpose)');
}

/** The allocator's own name, so that its ports not yet committed are shown with its pid; only for messages (undefined when not bound). */
export async function bindAllocator(lo: number, hi: number): Promise<NameHold | undefined> {
  const uid = process.getuid?.() ?? 0;
  for (let tries = 0; tries < 3; tries++) {
    const h = await bindName(allocatorName(uid, process.pid, lo, hi));
    if (h !== undefined) return h;
  }
  return undefined;
}

export interface CommitRequest {
  taken: Taken[];
  report: AllocationReport;
  shape: HoldShape;
  record: RecordInfo;
}

/** Bind each request's record; with `holder`, one holder process takes the whole set's names. On failure no record is left. */
export async function commitSet(requests: readonly CommitRequest[], holder: HolderSpec | undefined): Promise<HeldReservation[]> {
  const records: NameHold[][] = [];
  try {
    for (const r of requests) records.push(await bindRecord(r.record));
  } catch (e) {
    await Promise.all(records.flat().map(closeName));
    throw e;
  }
  let child: ChildProcess | undefined;
  if (holder !== undefined) {
    const fds: number[] = [];
    for (const r of requests) for (const t of r.taken) fds.push(fdOf(t.name));
    for (const h of records.flat()) fds.push(fdOf(h));
    try {
      child = await spawnHolder(fds, holder);
    } catch (e) {
      await Promise.all(records.flat().map(closeName));
      throw e;
    }
  }
  // The owner must still be the process that was checked now that the holder watches it: one that
  // ended meanwhile (or whose pid was taken by another) would end the lease at once, or never.
  if (child && holder?.ownerPid !== undefined && holder.ownerStart !== undefined && processStartTime(holder.ownerPid) !== holder.ownerStart) {
    await endHolder(child);
    await Promise.all(records.flat().map(closeName));
    throw new BerthError(EXIT.USAGE, `owner pid ${holder.ownerPid} ended before its lease was made; nothing was leased`);
  }
  const out = requests.map((r, i) => new HeldReservation(r.taken, r.report, r.shape, { records: records[i]!, ...(child ? { holder: child } : {}) }));
  if (child) await Promise.all(out.map((r) => r.dropNames()));
  return out;
}

function fdOf(h: NameHold | undefined): number {
  const fd = h === undefined ? undefined : serverFd(h);
  if (fd === undefined) throw new BerthError(EXIT.SOFTWARE, 'a lease name has no descriptor to hand to its holder');
  return fd;
}
