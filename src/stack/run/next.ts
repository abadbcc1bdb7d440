import { EXIT } from '../../errors.js';
import type { Happened } from './happened.js';
import { endReplica } from './replica.js';
import { rankEnded, recordJobEnd } from './replica-events.js';
import { recordFailure, restart, restartLeft } from './restart.js';
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
 *   an attempt failed → restart (restart: on-failure, a restartable class, restarts left)
 *     or the stack fails with it
 *   a rank of the job exited → restart a lone failed rank that may, else the stack ends
 *     at the first failed rank or once every rank has exited
 *   a restart's pause is over → the next attempt
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
      if (restartLeft(st, rep, h.exitCode)) {
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
      if (status !== 0 && rep.svc.replicas.length === 1 && restartLeft(st, rep, EXIT.SOFTWARE)) {
        st.update(rep, { state: 'failed', code: status, detail: `exited with status ${status}` });
        return restart(st, rep, `exited with status ${status}`);
      }
      rankEnded(st, rep, info);
      // The first failed rank ends the stack, so none is left waiting in a collective for
      // the dead one; rank 0 ending first is no success.
      if (status !== 0 || rep.svc.replicas.every((r) => r.final)) {
        recordJobEnd(st, rep, info);
        beginTeardown(st, 'job');
      }
      return;
    }
    case 'restart-due':
      return startAttempt(st, h.rep);
    case 'end':
      return beginTeardown(st, h.reason);
  }
}
