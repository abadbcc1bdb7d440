import type { PortEntry } from '../allocate/port-set.js';
import { allocateNamedSet, checkNoSetSize, type NamedReservation } from '../allocate/reserve-named.js';
import { allocatePorts } from '../allocate/allocate-ports.js';
import type { AllocateOptions, Reservation } from '../allocate/allocation-types.js';
import { pickSourceOptions, type ReserveOptions } from './options.js';
import { resolvePortSource } from './resolve.js';

/** The allocator's options: SOURCE options resolved (the default band when there are none), the rest as given. */
async function allocateOptions(o: ReserveOptions): Promise<AllocateOptions> {
  const { source: _s, port: _p, range: _r, layout: _l, band: _b, instance: _i, ...rest } = o;
  return { ...rest, source: await resolvePortSource(pickSourceOptions(o), o.procRoot !== undefined ? { procRoot: o.procRoot } : {}) };
}

/**
 * Lease and hold `count` distinct ports of a source, all or none (allocate/allocate-ports.ts).
 * Throws BerthError 69 explaining every excluded port, 74 when out of file descriptors,
 * 64 for bad options, 65 for a bad layout file.
 */
export async function reserve(options: ReserveOptions): Promise<Reservation> {
  return allocatePorts(await allocateOptions(options));
}

/** Lease a named port set from one source (the default band when none is given), all or none (allocate/reserve-named.ts). */
export async function reserveNamedSet(entries: readonly PortEntry[], o: ReserveOptions): Promise<NamedReservation> {
  checkNoSetSize(o);
  return allocateNamedSet(entries, await allocateOptions(o));
}
