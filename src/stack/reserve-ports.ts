import { setOptions } from '../allocate/reserve.js';
import { reserveSet } from '../allocate/reserve-set.js';
import type { PortSource, Reservation, ReserveOptions } from '../allocate/types.js';
import { BerthError, EXIT } from '../errors.js';
import { readSysctls } from '../host/sysctl.js';
import type { HostSysctls } from '../host/types.js';
import { firstLine, type Replica } from './replica.js';
import { replicaSource } from './sources.js';
import type { StackRun } from './stack-run.js';
import { releaseReservation } from './teardown.js';

/*
 * Every port of the stack first, as one set (allocate/reserve-set.ts): a stack that cannot
 * have every port starts nothing, and stacks competing for the same ports never each hold half.
 * Returns false when the stack is not to go on (no ports, or stopped meanwhile).
 */
export async function reserveStackPorts(st: StackRun): Promise<boolean> {
  const reps = st.replicas;
  const wanting: Replica[] = [];
  let reservations: Reservation[] = [];
  let failing: Replica | undefined;
  try {
    for (const rep of reps) {
      failing = rep;
      rep.source = sourceOf(st, rep);
      if (rep.source) wanting.push(rep);
    }
    failing = undefined;
    if (wanting.length > 0) {
      const requests = wanting.map((rep) => {
        const ro = reserveOptions(st, rep, rep.source!);
        return { source: rep.source!, count: 1, name: ro.name!, ...(ro.holdAddress !== undefined ? { holdAddress: ro.holdAddress } : {}) };
      });
      reservations = await reserveSet(requests, setOptions(reserveOptions(st, wanting[0]!, wanting[0]!.source!)));
    }
  } catch (e) {
    const err = e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, `internal error: ${(e as Error)?.stack ?? String(e)}`);
    const at = err.details?.request;
    const rep = failing ?? (typeof at === 'number' ? wanting[at] : undefined) ?? wanting[0] ?? reps[0]!;
    st.update(rep, { state: 'failed', code: err.exitCode, detail: firstLine(err.message) });
    st.failStack(rep, err.exitCode, `no port: ${err.message}`);
    return false;
  }
  wanting.forEach((rep, i) => (rep.reservation = reservations[i]));
  if (st.ending) {
    // stop() came while reserving, after the teardown gave back what it knew of
    for (const rep of wanting) await releaseReservation(st, rep);
    return false;
  }
  for (const rep of reps) {
    if (rep.reservation) rep.port = rep.reservation.ports[0];
    st.update(rep, { state: 'pending', ...(rep.port !== undefined ? { port: rep.port } : {}) });
  }
  return true;
}

function sourceOf(st: StackRun, rep: Replica): PortSource | undefined {
  if (rep.svc.spec.source.kind === 'default') st.host ??= readSysctls(st.procRoot);
  // The host is only read for the built-in band; other kinds ignore it.
  return replicaSource(st.spec, rep.svc.spec, rep.index, st.host ?? ({} as HostSysctls), rep.gpu?.gpu);
}

export function reserveOptions(st: StackRun, rep: Replica, source: PortSource): ReserveOptions {
  const ro: ReserveOptions = { source, ownerPid: process.pid, name: `${st.spec.file}:${rep.label}`, procRoot: st.procRoot };
  if (st.o.stateDir !== undefined) ro.stateDir = st.o.stateDir;
  // fd handoff: the hold is handed over as the service's socket, so it listens on `host:`.
  if (rep.svc.spec.handoff === 'fd') ro.holdAddress = rep.svc.spec.host;
  return ro;
}
