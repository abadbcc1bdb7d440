import { namedReservation, namedSetRequests } from '../allocate/reserve-named.js';
import { setOptions } from '../allocate/reserve.js';
import { reserveSet, type SetRequest } from '../allocate/reserve-set.js';
import type { PortSource, Reservation, ReserveOptions } from '../allocate/types.js';
import { BerthError, EXIT } from '../errors.js';
import { readSysctls } from '../host/sysctl.js';
import type { HostSysctls } from '../host/types.js';
import { firstLine, type Replica } from './replica.js';
import { replicaSource } from './sources.js';
import type { StackRun } from './stack-run.js';
import { releasePorts } from './teardown.js';

/*
 * Every port of the stack first, as one set (allocate/reserve-set.ts): each replica's whole
 * port set (its singles, held until the handoff, and its blocks, leased and never held), so a
 * stack that cannot have every port starts nothing, and stacks competing for the same ports
 * never each hold half. A replica keeps its leases for its whole life, across restarts
 * (restart.ts); teardown.ts gives them back.
 * Returns false when the stack is not to go on (no ports, or stopped meanwhile).
 */
export async function reserveStackPorts(st: StackRun): Promise<boolean> {
  const reps = st.replicas;
  const wanting: Replica[] = [];
  /** Which replica and entry each request is, to name them when one cannot be met. */
  const owners: { rep: Replica; entry: string }[] = [];
  let reservations: Reservation[] = [];
  let failing: Replica | undefined;
  try {
    const requests: SetRequest[] = [];
    for (const rep of reps) {
      failing = rep;
      rep.source = sourceOf(st, rep);
      if (!rep.source) continue;
      wanting.push(rep);
      const ro = reserveOptions(st, rep, rep.source);
      const base = { source: rep.source, name: ro.name!, ...(ro.holdAddress !== undefined ? { holdAddress: ro.holdAddress } : {}) };
      // Without `ports:` the one port keeps its lease name "<stack>:<service>/<replica>".
      const own = rep.svc.spec.portsDeclared ? namedSetRequests(rep.svc.spec.ports, base) : [{ ...base, count: 1 }];
      own.forEach((r, i) => owners.push({ rep, entry: rep.svc.spec.ports[i]!.name }));
      requests.push(...own);
    }
    failing = undefined;
    if (requests.length > 0) reservations = await reserveSet(requests, setOptions(reserveOptions(st, wanting[0]!, wanting[0]!.source!)));
  } catch (e) {
    const err = e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, `internal error: ${(e as Error)?.stack ?? String(e)}`);
    const at = err.details?.request;
    const owner = typeof at === 'number' ? owners[at] : undefined;
    const rep = failing ?? owner?.rep ?? wanting[0] ?? reps[0]!;
    const what = owner && owner.rep.svc.spec.portsDeclared ? `port "${owner.entry}": ` : '';
    st.update(rep, { state: 'failed', code: err.exitCode, detail: `${what}${firstLine(err.message)}` });
    st.failStack(rep, err.exitCode, `no port: ${what}${err.message}`);
    return false;
  }
  let next = 0;
  for (const rep of wanting) {
    const n = rep.svc.spec.ports.length;
    rep.set = namedReservation(rep.svc.spec.ports, reservations.slice(next, next + n));
    next += n;
  }
  if (st.ending) {
    // stop() came while reserving, after the teardown gave back what it knew of
    for (const rep of wanting) await releasePorts(st, rep);
    return false;
  }
  for (const rep of reps) {
    if (rep.set) rep.port = rep.set.assigned[0]!.ports[0];
    st.update(rep, { state: 'pending', ...(rep.port !== undefined ? { port: rep.port } : {}), ...(rep.set ? { ports: rep.set.assigned } : {}) });
  }
  return true;
}

function sourceOf(st: StackRun, rep: Replica): PortSource | undefined {
  if (rep.svc.spec.source.kind === 'default') st.host ??= readSysctls(st.procRoot);
  // The host is only read for the built-in band; other kinds ignore it.
  return replicaSource(st.spec, rep.svc.spec, rep.index, st.host ?? ({} as HostSysctls), rep.gpu?.gpu);
}

function reserveOptions(st: StackRun, rep: Replica, source: PortSource): ReserveOptions {
  const ro: ReserveOptions = { source, ownerPid: process.pid, name: `${st.spec.file}:${rep.label}`, procRoot: st.procRoot };
  if (st.o.stateDir !== undefined) ro.stateDir = st.o.stateDir;
  // fd handoff: the hold is handed over as the service's socket, so it listens on `host:`.
  if (rep.svc.spec.handoff === 'fd') ro.holdAddress = rep.svc.spec.host;
  return ro;
}
