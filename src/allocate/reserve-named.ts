import { BerthError, EXIT } from '../errors.js';
import { rangeSize } from '../host/intervals.js';
import { describeAssigned, portSetProblem, type AssignedPorts, type PortEntry } from './port-set.js';
import { reserveSet, type SetRequest } from './reserve-set.js';
import { checkLeaseName, foldOptionNames, setOptions } from './allocate-ports.js';
import type { AllocateOptions, PortSource, Reservation } from './allocation-types.js';

/*
 * A named port set (port-set.ts) allocated as one reserveSet, one request per entry, all or none.
 * `window` is the band instance's window less the set's other entries: {http: 1, dist: window} in
 * a 100-port window gets http = its lowest free port and dist the 99 after it (entries stack up
 * lowest first). It needs a band instance: a whole band or a range is no one's window.
 */

export interface NamedReservation {
  readonly assigned: AssignedPorts[];
  /** Same order as assigned. */
  readonly reservations: Reservation[];
  byName(name: string): Reservation | undefined;
  /** Close every hold and remove every lease of the set. Idempotent. */
  release(): Promise<void>;
}

class NamedSet implements NamedReservation {
  readonly assigned: AssignedPorts[];
  readonly reservations: Reservation[];
  private releasing: Promise<void> | undefined;

  constructor(entries: readonly PortEntry[], reservations: Reservation[]) {
    if (entries.length !== reservations.length) {
      throw new BerthError(EXIT.SOFTWARE, `a port set of ${entries.length} entries got ${reservations.length} reservations`);
    }
    this.reservations = reservations;
    this.assigned = entries.map((e, i) => ({
      name: e.name,
      kind: e.kind === 'single' ? 'single' : 'block',
      ports: [...reservations[i]!.ports].sort((a, b) => a - b),
    }));
  }

  byName(name: string): Reservation | undefined {
    const i = this.assigned.findIndex((a) => a.name === name);
    return i < 0 ? undefined : this.reservations[i];
  }

  release(): Promise<void> {
    this.releasing ??= Promise.all(this.reservations.map((r) => r.release())).then(() => undefined);
    return this.releasing;
  }
}

/** Wrap the reservations a caller got from reserveSet (one per entry, in order). */
export function namedReservation(entries: readonly PortEntry[], reservations: Reservation[]): NamedReservation {
  return new NamedSet(entries, reservations);
}

/** What every request of a named set shares; the entries add count, block, name and udp (each entry's own, never the set's). */
export type NamedRequestBase = Omit<SetRequest, 'count' | 'block' | 'name' | 'udp'> & {
  /** Lease label of the set (e.g. the replica); each lease is named "<name>/<entry>", or just the entry's name. */
  name?: string;
};

function windowProblem(entries: readonly PortEntry[], source: PortSource): string | undefined {
  if (source.kind === 'port' && (entries.length > 1 || entries.some((e) => e.kind === 'block' && e.count > 1))) {
    return `${entries.length > 1 ? `${entries.length} entries` : `a block of ${(entries[0] as { count: number }).count}`} from the one port ` +
      `${source.port}: a set needs a range or a band`;
  }
  const windows = entries.filter((e) => e.kind === 'window');
  if (windows.length === 0) return undefined;
  if (windows.length > 1) return `ports ${windows.map((w) => `"${w.name}"`).join(' and ')} are both "window": a set has at most one (the window is one run)`;
  if (source.kind !== 'band' || source.instance === undefined) {
    const what = source.kind === 'band' ? `the whole band ${source.band}` : source.kind === 'range' ? `a range` : `one port`;
    return `port "${windows[0]!.name}" is "window", the ports of one band instance's window, but the source is ${what}; give a band with an instance ` +
      `(--band B --instance N, or a stack service with band:), or use NAME=block:N`;
  }
  return undefined;
}

/**
 * The SetRequests of a named set, in entry order (a stack puts its replicas' sets into one reserveSet).
 * Throws BerthError 64 for a bad set or a window without a band instance, 69 for a window too small.
 */
export function namedSetRequests(entries: readonly PortEntry[], base: NamedRequestBase): SetRequest[] {
  const problem = portSetProblem(entries) ?? windowProblem(entries, base.source);
  if (problem !== undefined) throw new BerthError(EXIT.USAGE, `port set: ${problem}`);
  const { name, ...common } = base;
  const hasWindow = entries.some((e) => e.kind === 'window');
  const others = entries.reduce((n, e) => n + (e.kind === 'single' ? 1 : e.kind === 'block' ? e.count : 0), 0);
  return entries.map((e): SetRequest => {
    const label = name === undefined ? e.name : `${name}/${e.name}`;
    // With a window every entry stacks up from the window's bottom: a random start would cut it.
    const r: SetRequest = {
      ...common,
      ...(hasWindow ? { strategy: 'lowest' } : {}),
      count: 1,
      name: label,
      ...(e.kind === 'single' && e.udp === true ? { udp: true } : {}),
    };
    if (e.kind === 'block') return { ...r, count: e.count, block: true };
    if (e.kind === 'window') {
      const size = base.source.kind === 'port' ? 1 : rangeSize(base.source.range);
      const count = size - others;
      if (count < 1) {
        throw new BerthError(EXIT.UNAVAILABLE, `port set: the window ${describeRange(base.source)} has ${size} ports and the set's other entries take ` +
          `${others}, leaving none for "${e.name}"`);
      }
      return { ...r, count, block: true };
    }
    return r;
  });
}

function describeRange(s: PortSource): string {
  return s.kind === 'port' ? String(s.port) : `${s.range.lo}-${s.range.hi}`;
}

/** A set gives each entry its size: a caller's count or block is a misuse (BerthError 64). */
export function checkNoSetSize(o: Pick<AllocateOptions, 'count' | 'block'>): void {
  if (o.count !== undefined || o.block !== undefined) throw new BerthError(EXIT.USAGE, 'a port set gives each entry its size: count and block do not apply');
}

/**
 * Lease a named port set from one resolved source, all or none: singles held (unless hold: false),
 * blocks and windows leased, never held. Throws BerthError 64 (bad set, window without a band
 * instance, count/block given), 69 naming the entry not met, 74 when out of file descriptors.
 */
export async function allocateNamedSet(entries: readonly PortEntry[], o: AllocateOptions): Promise<NamedReservation> {
  checkNoSetSize(o);
  const opts = foldOptionNames(o);
  checkLeaseName(opts.name);
  const base: NamedRequestBase = {
    source: opts.source,
    strategy: opts.strategy ?? 'lowest',
    allowEphemeral: opts.allowEphemeral === true,
    allowPrivileged: opts.allowPrivileged === true,
    ...(opts.name !== undefined ? { name: opts.name } : {}),
    ...(opts.holdAddress !== undefined ? { holdAddress: opts.holdAddress } : {}),
  };
  const requests = namedSetRequests(entries, base);
  try {
    return namedReservation(entries, await reserveSet(requests, setOptions(opts)));
  } catch (e) {
    const i = e instanceof BerthError ? (e.details as { request?: unknown } | undefined)?.request : undefined;
    if (e instanceof BerthError && typeof i === 'number' && entries[i] !== undefined) {
      const entry = entries[i]!;
      const what = entry.kind === 'single' ? 'a port' : entry.kind === 'block' ? `a block of ${entry.count}` : 'its window';
      throw new BerthError(e.exitCode, `port "${entry.name}" (${what}): ${e.message}`, { ...e.details, entry: entry.name });
    }
    throw e;
  }
}

/** "http 20000, dist 20001-20032": the set in one line, for messages. */
export function describeNamedSet(set: readonly AssignedPorts[]): string {
  return set.map((a) => `${a.name} ${describeAssigned(a)}`).join(', ');
}
