import type { Replica, Service } from './replica.js';
import type { StackRun } from './stack-run.js';

/* Leases given back, with a warning rather than an error when that fails. */

/** `release()`, or a warning that `what` could not be released. */
export async function releaseOrWarn(st: StackRun, release: () => Promise<void>, what: string): Promise<void> {
  try {
    await release();
  } catch (e) {
    st.warn(`could not release ${what}: ${(e as Error).message}`);
  }
}

/** The replica's leases back (its holds closed): only once nothing of it runs any more. */
export async function releasePorts(st: StackRun, rep: Replica): Promise<void> {
  const set = rep.set;
  rep.set = undefined;
  if (set) await releaseOrWarn(st, () => set.release(), `the leases of ${rep.label} (port ${rep.port})`);
}

/** A service's shared ports back, when leased here. */
export async function releaseShared(st: StackRun, svc: Service): Promise<void> {
  const set = svc.shared?.set;
  if (!set) return;
  delete svc.shared!.set;
  const ports = svc.shared!.assigned.map((a) => `${a.name} ${a.ports[0]}`).join(', ');
  await releaseOrWarn(st, () => set.release(), `the shared ports of ${svc.spec.name} (${ports})`);
}
