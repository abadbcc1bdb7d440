import { EXIT } from '../../errors.js';
import { conditionStatus } from '../spec/graph.js';
import type { Service } from './replica.js';
import { startAttempt } from './start-attempt.js';
import type { StackRun } from './stack-run.js';
import { beginTeardown } from './teardown.js';

/*
 * Dependency order: a service starts as soon as every dependency meets its condition
 * (started, ready, completed); one whose condition can never be met fails the stack. Called
 * after every change that may let something start.
 */

/** Starts what may start, notices the stack being ready, blocked or finished. */
export function schedule(st: StackRun): void {
  if (st.ending) return;
  checkStackReady(st);
  for (const svc of st.services) {
    // Its replicas on other nodes (RunStackOptions.peerServices) are not known yet: setPeers schedules again.
    if (svc.launched || st.ending || st.waitsForPeers(svc.spec.name)) continue;
    if (svc.spec.dependsOn.every((d) => conditionStatus(d.condition, st.statuses(d.service)) === 'met')) startService(st, svc);
  }
  if (st.ending) return;
  for (const svc of st.services) {
    if (svc.launched) continue;
    for (const d of svc.spec.dependsOn) {
      if (conditionStatus(d.condition, st.statuses(d.service)) !== 'never') continue;
      const dep = st.byName.get(d.service)!;
      const gone = dep.replicas.find((r) => r.state === 'exited' || r.state === 'failed') ?? dep.replicas[0]!;
      const why = gone.code !== undefined && gone.code !== null ? ` (status ${gone.code})` : '';
      st.failStack(gone, EXIT.SOFTWARE, `${svc.spec.name} cannot start: it waits for ${d.service} to be ${d.condition === 'completed' ? 'completed (exit 0)' : d.condition}, but ${gone.label} ${gone.state}${why}`);
      return;
    }
  }
  // No job: the stack is over once nothing runs and nothing can start.
  if (!st.services.some((s) => s.spec.job) && st.services.every((s) => s.launched && s.replicas.every((r) => r.final && (r.state === 'exited' || r.state === 'failed')))) {
    beginTeardown(st, 'completed');
  }
}

function checkStackReady(st: StackRun): void {
  if (st.stackReadyMs !== undefined || st.ending) return;
  const up = st.services.every((s) => s.spec.job || s.replicas.every((r) => r.everReady || (r.state === 'exited' && r.code === 0)));
  if (!up) return;
  st.stackReadyMs = performance.now() - st.t0;
  const doc = st.run.endpointsDocument();
  try {
    st.o.onReady?.(doc);
  } catch {
    // the caller's problem, not the stack's
  }
  st.whenReady.resolve(doc);
}

function startService(st: StackRun, svc: Service): void {
  svc.launched = true;
  st.startedOrder.push(svc.spec.name);
  for (const rep of svc.replicas) startAttempt(st, rep);
}
