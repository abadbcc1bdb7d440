import { EXIT } from '../../errors.js';
import type { Happened } from './happened.js';
import { endGeneration, generationLeft } from './generation.js';
import { onLearnedMoved } from './learned-moved.js';
import { endReplica, restartsAsGroup } from './replica.js';
import { rankEnded, recordJobEnd } from './replica-events.js';
import { recordFailure, restart, RESTARTABLE, restartLeft } from './restart.js';
import { allCompleted, blockedStart, launchService, mayStart, noticeReady } from './schedule.js';
import type { StackRun } from './stack-run.js';
import { startAttempt } from './start-attempt.js';
import { beginTeardown } from './teardown.js';

/*
 * What comes next in a running stack, decided in one place. The phases (start-attempt,
 * replica-events, restart, schedule) record what happened to a replica and report it here
 * (StackRun.next); this alone starts, restarts or ends:
 *   a replica started, ready or completed, ports reserved, peers known → start what may start now,
 *     or fail the stack on a condition that can never be met, or end a job-less stack
 *     that has nothing left to run
 *   an attempt failed → restart (restart: on-failure, a restartable class, restarts left),
 *     for a rank of a job that restarts as a group its next generation (generation.ts),
 *     or the stack fails with it
 *   a rank of the job exited → restart a lone failed rank that may, or end the generation
 *     of a job that restarts as a group and has one left; else the stack ends at the first
 *     failed rank or once every rank has exited
 *   a restarted replica is ready on other learned ports → restart its dependents, or fail
 *   a dependent stopped for that → its next attempt
 *   a restart's pause is over → the next attempt
 *   a job's old generation is gone → every rank starts again
 *   the stack ends → the teardown
 */
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
      // A rank of a job that restarts as a group stays open until the job ends: a later
      // generation may start it again.
      const group = restartsAsGroup(rep.svc);
      rankEnded(st, rep, info, !group);
      // The first failed rank ends the stack, so none is left waiting in a collective for
      // the dead one; rank 0 ending first is no success.
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
