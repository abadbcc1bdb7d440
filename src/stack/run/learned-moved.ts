import { EXIT } from '../../errors.js';
import type { Replica } from './replica.js';
import type { StackRun } from './stack-run.js';

/*
 * A replica whose ports are learned came back from a restart on other ports: the dependents
 * that were started with the old values hold a stale address. One line names them; those
 * that allow restarts are stopped and started again (now that it is ready again, so they
 * get the new ports); one that does not stops the stack with 70, naming the stale port.
 */

/** The started replicas of services that depend on `rep`'s service, in the stack file's order. */
function staleDependents(st: StackRun, rep: Replica): Replica[] {
  const name = rep.svc.spec.name;
  return st.services
    .filter((s) => s.spec.dependsOn.some((d) => d.service === name))
    .flatMap((s) => s.replicas.filter((r) => r.runner !== undefined && !r.final && r.refresh === undefined));
}

export function onLearnedMoved(st: StackRun, rep: Replica, moved: string): void {
  const stale = staleDependents(st, rep);
  if (stale.length === 0) return;
  const names = stale.map((r) => r.label).join(', ');
  st.warn(
    `${rep.label} came back on other ports than before (${moved}); ${names} ${stale.length === 1 ? 'was' : 'were'} given the old ` +
      `${moved.includes(',') ? 'ones' : 'one'}`,
  );
  const stuck = stale.find((r) => r.svc.spec.restart.policy !== 'on-failure' || r.restarts >= r.svc.spec.restart.limit);
  if (stuck) {
    const why =
      stuck.svc.spec.restart.policy !== 'on-failure'
        ? 'it does not allow restarts (restart: on-failure)'
        : `it has no restart left (restart_limit ${stuck.svc.spec.restart.limit})`;
    return st.failStack(stuck, EXIT.SOFTWARE, `${stuck.label} uses ${rep.label}'s old port (${moved}), and ${why}: it would talk to a stale port`);
  }
  const reason = `${rep.label} moved (${moved}): started again with its new ports`;
  for (const r of stale) {
    r.refresh = reason;
    void r.runner!.stop();
  }
}
