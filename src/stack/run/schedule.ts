import { conditionStatus } from '../file/graph.js';
import type { Replica, Service } from './replica.js';
import type { StackRun } from './stack-run.js';

/* Dependency order, as next.ts asks after every change that may let something start: these only look. */

/** Not started yet and every dependency's condition met (its replicas on other nodes, RunStackOptions.peerServices, known). */
export function mayStart(st: StackRun, svc: Service): boolean {
  // A job whose generation ended before it started (across nodes) starts as the next one.
  if (svc.launched || svc.generationEnding || st.ending || st.waitsForPeers(svc.spec.name)) return false;
  return svc.spec.dependsOn.every((d) => conditionStatus(d.condition, st.statuses(d.service)) === 'met');
}

/** Marks a service started (its place in the stop order): the replicas to start. */
export function launchService(st: StackRun, svc: Service): Replica[] {
  svc.launched = true;
  st.startedOrder.push(svc.spec.name);
  return svc.replicas;
}

/** The first service that waits for a condition that can never be met: the replica to blame, and why. */
export function blockedStart(st: StackRun): { rep: Replica; reason: string } | undefined {
  for (const svc of st.services) {
    if (svc.launched) continue;
    for (const d of svc.spec.dependsOn) {
      if (conditionStatus(d.condition, st.statuses(d.service)) !== 'never') continue;
      const dep = st.byName.get(d.service)!;
      const gone = dep.replicas.find((r) => r.state === 'exited' || r.state === 'failed') ?? dep.replicas[0]!;
      const why = gone.code !== undefined && gone.code !== null ? ` (status ${gone.code})` : '';
      // A step that ran to completion while a dependent waited for it to serve: say how to wait for that.
      const fix =
        d.condition !== 'completed' && gone.state === 'exited' && gone.code === 0
          ? `; if ${d.service} is a one-shot step, wait for it with depends_on: { ${d.service}: completed }`
          : '';
      return {
        rep: gone,
        reason: `${svc.spec.name} cannot start: it waits for ${d.service} to be ${d.condition === 'completed' ? 'completed (exit ' +
          '0)' : d.condition}, but ${gone.label} ${gone.state}${why}${fix}`,
      };
    }
  }
  return undefined;
}

/** No job, every service started and every replica ended for good. */
export function allCompleted(st: StackRun): boolean {
  return (
    !st.services.some((s) => s.spec.job) &&
    st.services.every((s) => s.launched && s.replicas.every((r) => r.final && (r.state === 'exited' || r.state === 'failed')))
  );
}

/** Every non-job service is ready (or has completed), the first time: onReady and `ready`. */
export function noticeReady(st: StackRun): void {
  if (st.stackReadyMs !== undefined || st.ending) return;
  const up = st.services.every((s) => s.spec.job || s.replicas.every((r) => r.everReady || (r.state === 'exited' && r.code === 0)));
  if (!up) return;
  st.stackReadyMs = performance.now() - st.t0;
  const doc = st.run.endpointsDocument();
  st.callerHook(() => st.o.onReady?.(doc));
  st.whenReady.resolve(doc);
}
