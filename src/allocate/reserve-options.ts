import { durationMs, eitherName } from '../util/option-names.js';
import { pickSourceOptions, resolvePortSource } from './source-options.js';
import type { PortSource, ReserveOptions } from './types.js';

/** ReserveOptions with the source resolved and the CLI-named options (owner, ttl) folded into ownerPid/ttlMs. */
export type ResolvedReserveOptions = Omit<ReserveOptions, 'source' | 'port' | 'range' | 'layout' | 'band' | 'instance' | 'owner' | 'ttl'> & { source: PortSource };

/** What reserve() works with: without a source, the default band, exactly like `berth port`. */
export async function resolveReserveOptions(o: ReserveOptions): Promise<ResolvedReserveOptions> {
  const { source: _s, port: _p, range: _r, layout: _l, band: _b, instance: _i, owner, ttl, ...rest } = o;
  const out: ResolvedReserveOptions = { ...rest, source: await resolvePortSource(pickSourceOptions(o), o.procRoot !== undefined ? { procRoot: o.procRoot } : {}) };
  const ownerPid = eitherName('owner', owner, 'ownerPid', o.ownerPid);
  if (ownerPid !== undefined) out.ownerPid = ownerPid;
  const ttlMs = eitherName('ttl', ttl === undefined ? undefined : durationMs('ttl', ttl), 'ttlMs', o.ttlMs);
  if (ttlMs !== undefined) out.ttlMs = ttlMs;
  return out;
}
