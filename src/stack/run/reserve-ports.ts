import { leasedEntries } from '../../allocate/port-set.js';
import { namedReservation, namedSetRequests, type NamedReservation } from '../../allocate/reserve-named.js';
import { setOptions } from '../../allocate/allocate-ports.js';
import { reserveSet, type SetRequest } from '../../allocate/reserve-set.js';
import type { AllocateOptions, PortSource, Reservation } from '../../allocate/allocation-types.js';
import { BerthError, EXIT } from '../../errors.js';
import { readSysctls } from '../../host/sysctl.js';
import type { HostSysctls } from '../../host/host-map.js';
import { firstLine, type Replica, type Service } from './replica.js';
import { replicaSource } from '../file/sources.js';
import type { StackRun } from './stack-run.js';
import { reachableHost } from '../file/endpoint.js';
import { orphanLines } from './orphans.js';
import { releasePorts, releaseShared } from './release.js';

/*
 * Every port of the stack first, as one set (allocate/reserve-set.ts), so a stack that cannot
 * have every port starts nothing, and stacks competing for the same ports never each hold half.
 * A replica keeps its leases across restarts. A service's shared ports (`NAME: shared`) are in
 * the same set, from replica 0's source, unless replica 0 runs on another node, which leased them.
 * Returns false when the stack is not to go on (no ports, or stopped meanwhile).
 */
export async function reserveStackPorts(st: StackRun): Promise<boolean> {
  const reps = st.replicas;
  const wanting: Replica[] = [];
  /** Which replica and entry each request is, to name them when one cannot be met. */
  const owners: { rep: Replica; entry: string }[] = [];
  /** Services whose shared ports are leased here, with replica 0 (whose source they come from). */
  const sharing: Replica[] = [];
  let reservations: Reservation[] = [];
  let failing: Replica | undefined;
  try {
    const requests: SetRequest[] = [];
    for (const rep of reps) {
      failing = rep;
      rep.source = sourceOf(st, rep);
      if (!rep.source) continue;
      const ro = reserveOptions(st, rep, rep.source);
      const base = { source: rep.source, name: ro.name!, ...(ro.holdAddress !== undefined ? { holdAddress: ro.holdAddress } : {}) };
      const spec = rep.svc.spec;
      if (rep.index === 0 && spec.shared.length > 0 && !st.o.shared?.has(spec.name)) {
        sharing.push(rep);
        const shared = namedSetRequests(spec.shared, { ...base, name: `${st.spec.file}:${spec.name}` });
        shared.forEach((r, i) => owners.push({ rep, entry: spec.shared[i]!.name }));
        requests.push(...shared);
      }
      // Only shared or learned ports: nothing of its own to lease before it starts.
      const leased = leasedEntries(spec.ports);
      if (leased.length === 0) continue;
      wanting.push(rep);
      // Without `ports:` the one port keeps its lease name "<stack>:<service>/<replica>".
      const own = rep.svc.spec.portsDeclared ? namedSetRequests(leased, base) : [{ ...base, count: 1 }];
      own.forEach((r, i) => owners.push({ rep, entry: leased[i]!.name }));
      requests.push(...own);
    }
    failing = undefined;
    const first = wanting[0] ?? sharing[0];
    if (requests.length > 0) reservations = await reserveSet(requests, setOptions(reserveOptions(st, first!, first!.source!)));
  } catch (e) {
    // stop() came while reserving: the set ended at the next port and gave back what it had.
    if (st.ending) return false;
    const err = e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, `internal error: ${(e as Error)?.stack ?? String(e)}`);
    const at = err.details?.request;
    const owner = typeof at === 'number' ? owners[at] : undefined;
    const rep = failing ?? owner?.rep ?? wanting[0] ?? reps[0]!;
    const what = owner && owner.rep.svc.spec.portsDeclared ? `port "${owner.entry}": ` : '';
    st.update(rep, { state: 'failed', code: err.exitCode, detail: `${what}${firstLine(err.message)}` });
    st.failStack(rep, err.exitCode, `no port: ${what}${err.message}${err.exitCode === EXIT.UNAVAILABLE ? orphanLines(err, st.procRoot) : ''}`);
    return false;
  }
  // The requests' order: per replica, its service's shared ports (replica 0) then its own set.
  let next = 0;
  const take = (n: number) => reservations.slice(next, (next += n));
  for (const rep of reps) {
    const spec = rep.svc.spec;
    if (sharing.includes(rep)) {
      const set = namedReservation(spec.shared, take(spec.shared.length));
      rep.svc.shared = { host: reachableHost(spec.host), assigned: set.assigned, set };
    }
    const leased = leasedEntries(spec.ports);
    if (wanting.includes(rep)) rep.set = namedReservation(leased, take(leased.length));
  }
  for (const svc of st.services) {
    const given = st.o.shared?.get(svc.spec.name);
    if (given && svc.spec.shared.length > 0) svc.shared = { host: given.host, assigned: given.ports };
    if (svc.shared) st.run.shared[svc.spec.name] = { host: svc.shared.host, ports: svc.shared.assigned };
  }
  if (st.ending) {
    // stop() came after the last port was taken, after the teardown gave back what it knew of
    for (const rep of wanting) await releasePorts(st, rep);
    for (const svc of st.services) await releaseShared(st, svc);
    return false;
  }
  for (const rep of reps) {
    // A learned primary is known once the replica listens on it (replica-events.ts).
    if (rep.set && rep.svc.spec.ports[0]?.kind !== 'learn') rep.port = rep.set.assigned[0]!.ports[0];
    st.update(rep, { state: 'pending', ...(rep.port !== undefined ? { port: rep.port } : {}), ...(rep.set ? { ports: rep.set.assigned } : {}) });
  }
  st.callerHook(() => st.o.onReserved?.(st.run.endpointsDocument()));
  return true;
}

function sourceOf(st: StackRun, rep: Replica): PortSource | undefined {
  if (rep.svc.spec.source.kind === 'default') st.host ??= readSysctls(st.procRoot);
  // The host is only read for the built-in band; other kinds ignore it.
  return replicaSource(st.spec, rep.svc.spec, rep.index, st.host ?? ({} as HostSysctls), rep.gpu?.gpu);
}

function reserveOptions(st: StackRun, rep: Replica, source: PortSource): AllocateOptions {
  // The signal: without it the set never lets the event loop see a stop until it is complete.
  const ro: AllocateOptions = { source, ownerPid: process.pid, name: `${st.spec.file}:${rep.label}`, procRoot: st.procRoot, signal: st.reserveAbort.signal };
  // fd handoff: the hold is handed over as the service's socket, so it listens on `host:`.
  if (rep.svc.spec.handoff === 'fd') ro.holdAddress = rep.svc.spec.host;
  return ro;
}

/**
 * The shared ports of a job's next generation: a fresh lease for each entry not kept
 * (`generations: keep`), taken while the old ones are still leased, so the two never are the
 * same port. In entry order. Throws BerthError (69 when no port is left).
 */
export async function reserveNextShared(st: StackRun, svc: Service, old: NamedReservation): Promise<NamedReservation> {
  const rep = svc.replicas[0]!;
  const spec = svc.spec;
  const source = rep.source ?? sourceOf(st, rep)!;
  const kept = (name: string) => spec.sharedKept.includes(name);
  const fresh = spec.shared.filter((e) => !kept(e.name));
  let got: Reservation[] = [];
  if (fresh.length > 0) {
    const ro = reserveOptions(st, rep, source);
    const requests = namedSetRequests(fresh, {
      source,
      name: `${st.spec.file}:${spec.name}`,
      ...(ro.holdAddress !== undefined ? { holdAddress: ro.holdAddress } : {}),
    });
    got = await reserveSet(requests, setOptions(ro));
  }
  let next = 0;
  return namedReservation(spec.shared, spec.shared.map((e, i) => (kept(e.name) ? old.reservations[i]! : got[next++]!)));
}
