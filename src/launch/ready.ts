import { BerthError, EXIT } from '../errors.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { chooseProbeHost, isLoopbackName, stripBrackets } from './probe-host.js';
import { probeCmd, probeHttp, probeTcp, type ProbeResult } from './probes.js';
import { listensElsewhere } from './audit.js';
import { optionName } from './launch-options.js';
import { portVars } from './port-vars.js';
import { formatReadySpec, substitutePort } from './ready-spec.js';
import { substitute } from './spawn-plan.js';
import { learnDeadlineText } from './learn-phase.js';
import { exitedWhileAsking } from './lifecycle.js';
import { iso, type LaunchState } from './state.js';
import { fail, failIfTreeGone } from './stop.js';
import { followDaemon, onChildExit, startAudit } from './supervise.js';
import { readListenSnapshot, treeListeners } from './tree-listeners.js';
import type { ReadyInfo } from './launch-api.js';

const DEFAULT_PROBE_TIMEOUT_MS = 5_000;
/** Probe interval backs off from 10 ms to 250 ms. */
const PROBE_FIRST_MS = 10;
const PROBE_MAX_MS = 250;

/** The address berth reaches the service on, from the spec or --bind and what it listens on. */
function reachHost(s: LaunchState, requested: string | undefined): string {
  return chooseProbeHost(requested ?? s.o.bind, s.listening, s.handoff === 'fd');
}

/** `{port}` and `{ports.NAME…}` of a ready spec's text filled in (when the launch substitutes). */
function fillPorts(s: LaunchState, text: string): string {
  // A caller that filled in its own placeholders left those of learned ports, unknown to it.
  if (!s.subst) return fillLearned(s, text);
  const withPort = s.port !== undefined ? substitutePort(text, s.port) : text;
  return substitute(withPort, portVars(s.assigned()));
}

/** `{port}` of a learned primary and `{ports.NAME…}` of learned entries filled in. */
function fillLearned(s: LaunchState, text: string): string {
  if (s.learned.length === 0) return text;
  const withPort = s.learnPrimary && s.port !== undefined ? substitutePort(text, s.port) : text;
  return substitute(withPort, portVars(s.learned));
}

/** Phase 4 (with --ready): probe until the service answers. false: the launch ended or the deadline passed. */
export async function probeUntilReady(s: LaunchState): Promise<boolean> {
  s.happen({ kind: 'waiting', phase: 'probe' });
  const spec = s.spec!;
  const port = s.port;
  let attempt: (timeoutMs: number) => Promise<ProbeResult>;
  let host: string;
  if (spec.kind === 'http') {
    let url: URL;
    try {
      url = new URL(fillPorts(s, spec.url));
    } catch {
      throw new BerthError(EXIT.USAGE, `${s.name}: the ready probe ${JSON.stringify(spec.url)} is not a valid URL (expected http://HOST:PORT/PATH)`);
    }
    const urlHost = stripBrackets(url.hostname);
    host = isLoopbackName(urlHost) || urlHost === '0.0.0.0' || urlHost === '::' ? reachHost(s, urlHost) : urlHost;
    const target = url.port === '' ? 80 : Number(url.port);
    const path = (url.pathname || '/') + url.search;
    attempt = (t) => probeHttp(host, target, path, url.host, t);
  } else if (spec.kind === 'tcp') {
    host = reachHost(s, undefined);
    attempt = (t) => probeTcp(host, port!, t);
  } else {
    host = reachHost(s, undefined);
    const command = s.subst
      ? substitute(spec.command, { ...(port !== undefined ? { port: String(port) } : {}), host, name: s.name, ...portVars(s.assigned()) })
      : fillLearned(s, spec.command);
    attempt = (t) => probeCmd(command, s.env!, s.o.cwd, t);
  }
  let interval = PROBE_FIRST_MS;
  for (;;) {
    if (s.settled || failIfTreeGone(s)) return false;
    const left = s.remainingMs();
    if (left <= 0) return false; // the deadline timer reports it
    const full = s.o.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
    const budget = Math.max(1, Math.min(full, left));
    s.happen({ kind: 'asking' });
    const r = await attempt(budget);
    const exited = exitedWhileAsking(s.life);
    s.happen({ kind: 'asked' });
    s.probe.attempts++;
    // An attempt cut short by the deadline says nothing about the service: keep the one before.
    if (r.ok || !r.timedOut || budget === full || s.probe.last === undefined) s.probe.last = { ...r, host };
    if (s.settled) return false;
    if (r.ok) return true; // launch.ts reports it answered in this same turn
    if (exited) {
      // It exited while berth asked, and did not answer: the exit is the verdict now.
      onChildExit(s);
      return false;
    }
    await s.sleep(Math.min(interval, Math.max(1, s.remainingMs())));
    interval = Math.min(interval * 1.5, PROBE_MAX_MS);
  }
}

/** Ready: the ready file, the event, `ready` resolved; a daemonized service is followed from here. */
export function becomeReady(s: LaunchState): void {
  // Stopped or failed in the turn of the last step: it never was ready, say nothing of it.
  if (s.life.at !== 'answered') return;
  const port = s.port ?? 0;
  const childAlive = s.childExit === undefined;
  const pid = childAlive ? s.child!.pid! : (s.ownerPids[0] ?? s.child!.pid!);
  // A portless service is reached on nothing (a probe's host names some other service).
  const host = s.portless ? '' : (s.probe.last?.host ?? reachHost(s, undefined));
  s.mark('readyMs');
  const waitedMs = Math.round((s.timings.readyMs ?? 0) - (s.timings.spawnedMs ?? 0));
  const info: ReadyInfo = { name: s.name, host, port, pid, readyAt: iso(), waitedMs };
  if (s.set || s.learned.length > 0) info.ports = s.assigned();
  if (s.learned.length > 0) info.learned = s.learned.map((a) => a.name);
  if (s.o.readyFile !== undefined) {
    try {
      writeFileAtomic(s.o.readyFile, JSON.stringify(info, null, 2) + '\n', 0o644);
    } catch (e) {
      fail(s, EXIT.IOERR, `${s.name}: ready, but cannot write the ready file ${s.o.readyFile}: ${(e as Error).message}`);
      return;
    }
  }
  clearTimeout(s.deadlineTimer);
  s.happen({ kind: 'ready' });
  s.emit({ type: 'ready', info, t: iso() });
  s.whenReady.resolve(info);
  // After the ready callbacks (`berth run` prints its ready line first, then any finding).
  setImmediate(() => startAudit(s));
  // The child may have exited 0 already, leaving a daemon: supervise the tree.
  if (!childAlive) void followDaemon(s);
}

/** The readiness deadline passed: say what berth was waiting for. */
export function onDeadline(s: LaunchState, timeoutMs: number): void {
  if (s.settled) return;
  const where =
    s.phase === 'ownership'
      ? `the service did not listen on port ${s.port}${elsewhere(s)}`
      : s.phase === 'learn'
        ? learnDeadlineText(s)
        : s.phase === 'probe'
          ? `the probe ${fillPorts(s, formatReadySpec(s.spec!))} did not succeed (last: ` +
            `${s.probe.last?.detail ?? 'no attempt finished'}, ${s.probe.attempts} attempts)`
          : `berth was still in phase ${s.phase}`;
  fail(s, EXIT.TEMPFAIL, `${s.name}: not ready after ${(timeoutMs / 1000).toFixed(1)}s (${optionName(s.o, '--ready-timeout')}): ${where}`);
}

/** "; it listens on 8000 instead (…)" when the tree listens on other ports, else "". */
function elsewhere(s: LaunchState): string {
  if (!s.tree || s.port === undefined) return '';
  try {
    const text = listensElsewhere(treeListeners(s.procRoot, s.tree, readListenSnapshot(s.procRoot).listening), s.port);
    return text === undefined ? '' : `; ${text}`;
  } catch {
    return ''; // the plain message is still true
  }
}
