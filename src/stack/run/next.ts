import { EXIT } from '../../errors.js';
import type { Happened } from './happened.js';
import { endGeneration, generationLeft } from './generation.js';
import { endReplica, restartsAsGroup, type Replica } from './replica.js';
import { rankEnded, recordJobEnd } from './replica-events.js';
import { recordFailure, restart, RESTARTABLE, restartLeft } from './restart.js';
import { allCompleted, blockedStart, launchService, mayStart, noticeReady } from './schedule.js';
import type { StackRun } from './stack-run.js';
import { startAttempt } from './start-attempt.js';
import { beginTeardown } from './teardown.js';

/* The one place that starts, restarts or ends (index.ts): the phases report here through StackRun.next. */
export function next(st: StackRun, h: Happened): void {
  switch (h.kind) {
    case 'progress': {
      if (st.ending) return;
      noticeReady(st);
      for (const svc of st.services) if (mayStart(st, svc)) for (const rep of launchService(st, svc)) startAttempt(st, rep);
      if (st.ending) return;
      const blocked = blockedStart(st);
      if (blocked) return st.failStack(blocked.rep, EXIT.SOFTWARE, blocked.reason);
      if (allCompleted(st)) beginTeardown(st, 'completed');
      return;
    }
    case 'attempt-failed': {
      const { rep } = h;
      if (restartsAsGroup(rep.svc)) {
        if (rep.generationStop) return; // its generation is ending already
        if (generationLeft(st, rep.svc) && RESTARTABLE.has(h.exitCode)) return endGeneration(st, rep.svc, rep, `failed: ${h.reason}`);
      }
      if (!restartsAsGroup(rep.svc) && restartLeft(st, rep, h.exitCode)) {
        restart(st, rep, h.reason);
      } else {
        rep.final = true;
        if (!st.ending) {
          recordFailure(st, rep, h.exitCode, h.reason, h.bundle);
          beginTeardown(st, 'failed');
        }
      }
      // After a 'failed' event the exit is still to come: replica-events ends the replica then.
      if (h.ended && rep.final) endReplica(rep);
      return;
    }
    case 'rank-exited': {
      const { rep, info } = h;
      const status = info.exitCode;
      if (status !== 0 && !restartsAsGroup(rep.svc) && rep.svc.replicas.length === 1 && restartLeft(st, rep, EXIT.SOFTWARE)) {
        st.update(rep, { state: 'failed', code: status, detail: `exited with status ${status}` });
        return restart(st, rep, `exited with status ${status}`);
      }
      if (status !== 0 && restartsAsGroup(rep.svc) && generationLeft(st, rep.svc)) {
        const how = info.signal ? `was killed by ${info.signal}` : `exited with status ${status}`;
        st.update(rep, { state: 'failed', code: status, ...(info.signal ? { signal: info.signal } : {}), detail: `${how}; its generation ends` });
        return endGeneration(st, rep.svc, rep, how);
      }
      // A rank of a job that restarts as a group stays open until the job ends: a later generation may start it.
      const group = restartsAsGroup(rep.svc);
      rankEnded(st, rep, info, !group);
      // The first failed rank ends the stack (none left waiting in a collective for it); rank 0 ending first is no success.
      if (status !== 0 || rep.svc.replicas.every((r) => r.final)) {
        if (group) for (const r of rep.svc.replicas) if (r.final) endReplica(r);
        recordJobEnd(st, rep, info);
        beginTeardown(st, 'job');
      }
      return;
    }
    case 'learned-moved':
      onLearnedMoved(st, h.rep, h.moved);
      return next(st, { kind: 'progress' });
    case 'refresh-stopped':
      // Not a failure: it was stopped for its dependency's new ports (counts as a restart).
      return restart(st, h.rep, h.reason);
    case 'restart-due':
      return startAttempt(st, h.rep);
    case 'generation-due':
      // Ended before it was started (across nodes): it starts when its turn comes, as this generation.
      if (!h.svc.launched) return next(st, { kind: 'progress' });
      for (const rep of h.svc.replicas) startAttempt(st, rep);
      return;
    case 'end':
      return beginTeardown(st, h.reason);
  }
}

/*
 * A replica with learned ports came back from a restart on other ports: the dependents started
 * with the old values hold a stale address. Those that allow restarts are started again (now,
 * so they get the new ports); one that does not stops the stack with 70, naming the stale port.
 */
function onLearnedMoved(st: StackRun, rep: Replica, moved: string): void {
  const stale = st.services
    .filter((s) => s.spec.dependsOn.some((d) => d.service === rep.svc.spec.name))
    .flatMap((s) => s.replicas.filter((r) => r.runner !== undefined && !r.final && r.refresh === undefined));
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
