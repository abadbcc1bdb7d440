import { dirname } from 'node:path';
import { EXIT } from '../../errors.js';
import type { ExitInfo, LaunchEvent } from '../../launch/launch-api.js';
import type { Happened } from './happened.js';
import { endReplica, firstLine, stripName, type Replica } from './replica.js';
import type { StackRun } from './stack-run.js';

/*
 * What launch() reports about a replica's attempt and its exit, recorded as replica states and
 * returned as what happened, for next.ts. Events of an earlier attempt are ignored.
 */

export function onRunnerEvent(st: StackRun, rep: Replica, attempt: number, e: LaunchEvent): Happened | undefined {
  if (attempt !== rep.attempt) return undefined;
  const port = rep.port !== undefined ? { port: rep.port } : {};
  switch (e.type) {
    case 'spawned':
      st.update(rep, { state: 'starting', pid: e.pid, ...port });
      // A dependent may wait only for this replica to be started (depends_on: { X: started }).
      return { kind: 'progress' };
    case 'owned':
      st.update(rep, { state: 'owned', pid: e.pid, ...port });
      return { kind: 'progress' };
    case 'learned': {
      rep.learned = e.ports;
      if (rep.svc.spec.ports[0]?.kind === 'learn') rep.port = e.ports[0]!.ports[0];
      const all = [...(rep.set?.assigned ?? []), ...rep.learned];
      const eph = e.ephemeral.length > 0 ? ` (${e.ephemeral.join(', ')} in the ephemeral range)` : '';
      st.update(
        rep,
        {
          state: rep.state,
          ...(rep.port !== undefined ? { port: rep.port } : {}),
          ports: all,
          learned: e.ports.map((a) => a.name),
          detail: `learned ${e.ports.map((a) => `${a.name} ${a.ports[0]}`).join(', ')}${eph}`,
        },
        false,
      );
      break;
    }
    case 'ready': {
      if (rep.port !== undefined && e.info.host !== '') rep.host = e.info.host;
      rep.everReady = true;
      const moved = movedLearned(rep);
      if (rep.learned.length > 0) rep.lastLearned = rep.learned;
      st.update(rep, { state: 'ready', pid: e.info.pid, ...(rep.port !== undefined ? { host: rep.host } : {}) });
      return moved ? { kind: 'learned-moved', rep, moved } : { kind: 'progress' };
    }
    case 'failed': {
      const d = rep.diag[rep.diag.length - 1];
      if (d && e.bundle) d.keep = true;
      // Asked to stop during the teardown, or its generation ended: a stop, not a cause.
      if ((st.ending && rep.stopAsked) || rep.generationStop) break;
      rep.attemptFailed = true;
      const reason = stripName(firstLine(e.message), rep.label);
      st.update(rep, { state: 'failed', code: e.exitCode, detail: reason });
      // Its exit comes later (onRunnerExited ends it then).
      return { kind: 'attempt-failed', rep, exitCode: e.exitCode, reason, bundle: e.bundle, ended: false };
    }
    case 'warning':
      st.warn(e.message);
      break;
    case 'write-failed':
      st.writeFailures.report(e.path, e.error, `the rest of ${rep.label}'s output is not in it`);
      break;
    case 'audit': {
      // Said once already, as a 'warning' (or not at all: acknowledged by `strays:`): recorded here, not printed again;
      // each port once per replica, though every attempt reports its own.
      for (const l of e.listeners) if (!rep.unexpected.some((u) => u.port === l.port)) rep.unexpected.push(l);
      const ack = e.listeners.filter((l) => l.acknowledged).map((l) => l.port);
      const note = ack.length > 0 ? ` (acknowledged by strays: ${ack.join(', ')})` : '';
      st.update(
        rep,
        { state: rep.state, unexpectedListeners: rep.unexpected, detail: `listens outside its ports on ${e.listeners.map((l) => l.port).join(', ')}${note}` },
        false,
      );
      break;
    }
    case 'foreign': {
      // Said once on the console (a warning, or the failure that follows); recorded here.
      for (const l of e.listeners) if (!rep.foreign.some((f) => f.inode === l.inode && f.port === l.port)) rep.foreign.push(l);
      st.update(
        rep,
        {
          state: rep.state,
          foreign: rep.foreign,
          detail: `foreign listener on port ${[...new Set(e.listeners.map((l) => l.port))].join(', ')}: ${e.listeners.map((l) => l.message).join('; ')}`,
        },
        false,
      );
      break;
    }
    case 'reserved':
    case 'stopping':
    case 'exited':
      // stopping is reported when berth asks; exits through the `exited` promise
      break;
  }
  return undefined;
}

/** "api 40001 → 40117" for each learned port that a restart brought back on another, or undefined. */
function movedLearned(rep: Replica): string | undefined {
  const before = rep.lastLearned;
  if (!before) return undefined;
  const moved = rep.learned.flatMap((a) => {
    const was = before.find((b) => b.name === a.name)?.ports[0];
    return was !== undefined && was !== a.ports[0] ? [`${a.name} ${was} → ${a.ports[0]}`] : [];
  });
  return moved.length > 0 ? moved.join(', ') : undefined;
}

export function onRunnerExited(st: StackRun, rep: Replica, attempt: number, info: ExitInfo): Happened | undefined {
  if (attempt !== rep.attempt) return undefined;
  const d = rep.diag[rep.diag.length - 1];
  if (d && info.bundle) d.keep = true;
  if (rep.attemptFailed) {
    // The failure was reported at its 'failed' event; a restart waits for this exit.
    if (rep.final) endReplica(rep);
    return undefined;
  }
  const status = info.exitCode;
  const exited = { state: 'exited' as const, code: status, ...(info.signal ? { signal: info.signal } : {}) };
  if (rep.generationStop) {
    // Its generation ended (generation.ts waits for every rank's exit): recorded, no cause.
    st.update(rep, exited);
    return undefined;
  }
  if (rep.refresh !== undefined && !st.ending) {
    const reason = rep.refresh;
    rep.refresh = undefined;
    st.update(rep, { ...exited, detail: reason });
    return { kind: 'refresh-stopped', rep, reason };
  }
  if (rep.stopAsked || st.ending) {
    rankEnded(st, rep, info);
    return undefined;
  }
  if (rep.svc.spec.job) return { kind: 'rank-exited', rep, info };
  if (status === 0) {
    // A one-shot service (something may wait for it to complete).
    st.update(rep, { state: 'exited', code: 0 });
    rep.final = true;
    endReplica(rep);
    return { kind: 'progress' };
  }
  const reason = info.signal ? `was killed by ${info.signal} after it was ready` : `exited with status ${status} after it was ready`;
  st.update(rep, { ...exited, state: 'failed', detail: reason });
  rep.attemptFailed = true;
  return { kind: 'attempt-failed', rep, exitCode: EXIT.SOFTWARE, reason, bundle: info.bundle, ended: true };
}

/** A rank of the job exited for good: recorded, its stream closed (`close`: now). */
export function rankEnded(st: StackRun, rep: Replica, info: ExitInfo, close = true): void {
  st.update(rep, { state: 'exited', code: info.exitCode, ...(info.signal ? { signal: info.signal } : {}) });
  rep.final = true;
  if (close) endReplica(rep);
}

/** The job's end as the result tells it; a failed rank is the stack's failure (its status the stack's). */
export function recordJobEnd(st: StackRun, rep: Replica, info: ExitInfo): void {
  const status = info.exitCode;
  const ranks = rep.svc.replicas.length;
  st.job = { service: rep.svc.spec.name, replica: rep.index, status, code: info.code, signal: info.signal };
  if (status === 0) return;
  const how = info.signal ? `was killed by ${info.signal}` : `exited with status ${status}`;
  const who = ranks === 1 ? how : `rank ${rep.index} of ${ranks} ${how}; the other ranks are stopped`;
  st.failure = {
    service: st.job.service,
    replica: rep.index,
    exitCode: status,
    reason: who,
    logs: st.logsOf(rep),
    ...(info.bundle ? { diagnostics: dirname(info.bundle), bundle: info.bundle } : {}),
  };
}
