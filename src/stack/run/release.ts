import type { Replica, Service } from './replica.js';
import type { StackRun } from './stack-run.js';

/* Leases given back, with a warning rather than an error when that fails. */

/** The replica's leases back (its holds closed): only once nothing of it runs any more. */
export async function releasePorts(st: StackRun, rep: Replica): Promise<void> {
  const set = rep.set;
  rep.set = undefined;
  if (!set) return;
  try {
    await set.release();
  } catch (e) {
    st.warn(`could not release the leases of ${rep.label} (port ${rep.port}): ${(e as Error).message}`);
  }
}

/** A service's shared ports back, when leased here. */
export async function releaseShared(st: StackRun, svc: Service): Promise<void> {
  const set = svc.shared?.set;
  if (!set) return;
  delete svc.shared!.set;
  try {
    await set.release();
  } catch (e) {
    st.warn(
      `could not release the shared ports of ` +
        `${svc.spec.name} (${svc.shared!.assigned.map((a) => `${a.name} ${a.ports[0]}`).join(', ')}): ${(e as Error).message}`,
    );
  }
}
