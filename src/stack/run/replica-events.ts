import { EXIT } from '../../errors.js';
import type { ExitInfo, LaunchEvent } from '../../launch/types.js';
import { replicaFailed, restart, restartLeft } from './restart.js';
import { endReplica, firstLine, stripName, type Replica } from './replica.js';
import { dirname } from 'node:path';
import { schedule } from './schedule.js';
import type { StackRun } from './stack-run.js';
import { beginTeardown } from './teardown.js';

/*
 * What launch() reports about a replica's attempt (spawned, owned, ready, failed, warnings,
 * listeners outside its ports) and how its exit ends it: the job's ranks end the stack (all
 * of them exited, or the first that failed), a one-shot
 * service completes, anything else after it was ready is a failure (restart.ts decides
 * whether it comes back).
 * Events of an earlier attempt are ignored.
 */

export function onRunnerEvent(st: StackRun, rep: Replica, attempt: number, e: LaunchEvent): void {
  if (attempt !== rep.attempt) return;
  const port = rep.port !== undefined ? { port: rep.port } : {};
  switch (e.type) {
    case 'spawned':
      st.update(rep, { state: 'starting', pid: e.pid, ...port });
      break;
    case 'owned':
      st.update(rep, { state: 'owned', pid: e.pid });
      break;
    case 'ready': {
      if (rep.port !== undefined && e.info.host !== '') rep.host = e.info.host;
      rep.everReady = true;
      st.update(rep, { state: 'ready', pid: e.info.pid, ...(rep.port !== undefined ? { host: rep.host } : {}) });
      schedule(st);
      break;
    }
    case 'failed': {
      const d = rep.diag[rep.diag.length - 1];
      if (d && e.bundle) d.keep = true;
      // Asked to stop during the teardown: its exit is reported as a stop, not a cause.
      if (st.ending && rep.stopAsked) break;
      rep.attemptFailed = true;
      const reason = stripName(firstLine(e.message), rep.label);
      st.update(rep, { state: 'failed', code: e.exitCode, detail: reason });
      replicaFailed(st, rep, e.exitCode, reason, e.bundle);
      break;
    }
    case 'warning':
      st.warn(e.message);
      break;
    case 'audit':
      // The same messages came as 'warning' events (stderr, once each): here they become the
      // replica's record, in events.jsonl with detail and in endpoints.json.
      // Each port once per replica, though every attempt (a restart) reports its own.
      for (const l of e.listeners) if (!rep.unexpected.some((u) => u.port === l.port)) rep.unexpected.push(l);
      st.update(rep, { state: rep.state, unexpectedListeners: rep.unexpected, detail: e.listeners.map((l) => l.message).join('; ') });
      break;
    case 'reserved':
    case 'stopping':
    case 'exited':
      // stopping is reported when berth asks; exits through the `exited` promise
      break;
  }
}

export function onRunnerExited(st: StackRun, rep: Replica, attempt: number, info: ExitInfo): void {
  if (attempt !== rep.attempt) return;
  const d = rep.diag[rep.diag.length - 1];
  if (d && info.bundle) d.keep = true;
  if (rep.attemptFailed) {
    // The failure was reported at its 'failed' event; a restart waits for this exit.
    if (rep.final) endReplica(rep);
    return;
  }
  const status = info.exitCode;
  const sig = info.signal ?? undefined;
  if (rep.stopAsked || st.ending) {
    st.update(rep, { state: 'exited', code: status, ...(sig ? { signal: sig } : {}) });
    rep.final = true;
    endReplica(rep);
    return;
  }
  if (rep.svc.spec.job) return jobRankExited(st, rep, info);
  if (status === 0) {
    // A one-shot service (something may wait for it to complete).
    st.update(rep, { state: 'exited', code: 0 });
    rep.final = true;
    endReplica(rep);
    schedule(st);
    return;
  }
  const reason = info.signal ? `was killed by ${info.signal} after it was ready` : `exited with status ${status} after it was ready`;
  st.update(rep, { state: 'failed', code: status, ...(sig ? { signal: sig } : {}), detail: reason });
  rep.attemptFailed = true;
  replicaFailed(st, rep, EXIT.SOFTWARE, reason, info.bundle);
  if (rep.final) endReplica(rep);
}

/**
 * A rank of the job exited. The stack ends when every rank has (status 0 if all were 0), or
 * at the first that failed: its status is the stack's, and the teardown stops the others so
 * none is left waiting in a collective for the dead one. Rank 0 ending first is no success.
 */
function jobRankExited(st: StackRun, rep: Replica, info: ExitInfo): void {
  const status = info.exitCode;
  const sig = info.signal ?? undefined;
  const ranks = rep.svc.replicas.length;
  if (status !== 0 && ranks === 1 && restartLeft(st, rep, EXIT.SOFTWARE)) {
    st.update(rep, { state: 'failed', code: status, detail: `exited with status ${status}` });
    restart(st, rep, `exited with status ${status}`);
    return;
  }
  st.update(rep, { state: 'exited', code: status, ...(sig ? { signal: sig } : {}) });
  rep.final = true;
  endReplica(rep);
  const job = { service: rep.svc.spec.name, replica: rep.index, status, code: info.code, signal: info.signal };
  if (status !== 0) {
    st.job = job;
    const how = sig ? `was killed by ${sig}` : `exited with status ${status}`;
    const who = ranks === 1 ? how : `rank ${rep.index} of ${ranks} ${how}; the other ranks are stopped`;
    st.failure = { service: job.service, replica: rep.index, exitCode: status, reason: who, logs: st.run.logFiles(job.service, rep.index), ...(info.bundle ? { diagnostics: dirname(info.bundle), bundle: info.bundle } : {}) };
    beginTeardown(st, 'job');
    return;
  }
  if (rep.svc.replicas.every((r) => r.final)) {
    st.job = job;
    beginTeardown(st, 'job');
  }
}
