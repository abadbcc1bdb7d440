import { join } from 'node:path';
import { IMPLICIT_SET, portSetProblem } from '../allocate/port-set.js';
import { hasSourceOptions } from '../source/options.js';
import { checkLeaseName } from '../allocate/allocate-ports.js';
import { BerthError, EXIT } from '../errors.js';
import { removeReplaceable } from '../util/atomic-write.js';
import { nulProblems } from '../util/nul-bytes.js';
import { OutputTee } from './output.js';
import { portPlaceholderProblem } from './port-vars.js';
import { filledAtMost, preflight } from './preflight.js';
import { learnEntriesProblem } from './learn.js';
import { learnLineWatcher } from './learn-phase.js';
import { onDeadline } from './ready.js';
import { checkReadyWithHandoff, formatReadySpec, parseReadySpec } from './ready-spec.js';
import { createRunDir } from './launch-run-dir.js';
import { findExecutable, findPerl } from './spawn-plan.js';
import { logWriteFailed } from './write-failed.js';
import { DEFAULT_READY_TIMEOUT_MS, type LaunchState } from './state.js';

/** Phase 0: everything that can be refused without touching a port; opens the logs, arms the deadline. */
export function prepare(s: LaunchState): void {
  const o = s.o;
  if (o.command.length === 0 || o.command[0] === '')
    throw new BerthError(EXIT.USAGE, 'no command to run: put it after --, e.g. berth run -- python3 -m http.server {port}');
  checkNoNul(o);
  s.spec = typeof o.ready === 'string' ? parseReadySpec(o.ready) : o.ready;
  checkReadyWithHandoff(s.spec, s.handoff);
  // Without a source or reservation, reserve() takes the default band, as `berth run` does.
  if (s.portless) checkPortless(s);
  else checkPortSet(s);
  checkLearn(s);
  // cwd, program, argv size (its placeholders filled in), bind, timers: before anything is leased
  preflight(o, s.subst ? (t) => filledAtMost(t, { name: s.name, host: o.bind ?? '127.0.0.1' }) : undefined);
  if (!s.portless) checkLeaseName(o.name);
  const base = o.env ?? process.env;
  if (findExecutable(o.command[0]!, base.PATH, o.cwd) === undefined) {
    throw new BerthError(EXIT.USAGE, `command not found: ${o.command[0]} (not an executable file${o.command[0]!.includes('/') ? '' : ' in PATH'})`);
  }
  // The fd shim is perl (spawn-plan.ts); without it the service would get a non-blocking socket.
  if (s.handoff === 'fd' && findPerl(base) === undefined) {
    throw new BerthError(
      EXIT.USAGE,
      `${s.name}: fd handoff needs perl on PATH (it passes the socket as a blocking fd 3 and sets LISTEN_PID; Debian/Ubuntu: perl-base, RHEL-like: ` +
        `perl-interpreter): install perl, or use the release handoff`,
    );
  }
  if (o.readyFile !== undefined) {
    try {
      removeReplaceable(o.readyFile); // a waiter must not mistake the last run's file for this one
    } catch (e) {
      throw new BerthError(EXIT.IOERR, `cannot replace the ready file ${o.readyFile}: ${(e as Error).message}`);
    }
  }
  s.runDir = createRunDir({
    name: s.name,
    env: base,
    ...(o.diagDir !== undefined ? { diagDir: o.diagDir } : {}),
    ...(o.stateDir !== undefined ? { stateDir: o.stateDir } : {}),
  });
  const lines = learnLineWatcher(s);
  const kick = (chunk: Buffer) => {
    lines?.(chunk);
    s.kick();
  };
  s.out = openLog(s, 'stdout', o.stdoutLog, o.stdout === undefined ? process.stdout : o.stdout, kick);
  s.err = openLog(s, 'stderr', o.stderrLog, o.stderr === undefined ? process.stderr : o.stderr, kick);
  const timeout = o.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
  s.deadlineTimer = setTimeout(() => onDeadline(s, timeout), timeout);
}

/** A NUL in what becomes argv, environment or a path: a usage error naming it, not a crash at spawn. */
function checkNoNul(o: LaunchState['o']): void {
  const ready = typeof o.ready === 'string' ? o.ready : o.ready?.kind === 'cmd' ? o.ready.command : o.ready?.kind === 'http' ? o.ready.url : undefined;
  const problems = nulProblems([
    ...o.command.map((w, i): [string, string] => [`command word ${i + 1}`, w]),
    ...Object.entries(o.env ?? {}).flatMap(([k, v]): [string, string | undefined][] => [
      [`environment name ${JSON.stringify(k)}`, k],
      [`environment variable ${k.replace(/\0/g, '\\0')}`, v],
    ]),
    ['cwd', o.cwd],
    ['name', o.name],
    ['ready', ready],
    ['readyFile', o.readyFile],
    ['diagDir', o.diagDir],
  ]);
  if (problems.length > 0) throw new BerthError(EXIT.USAGE, problems.join('\n'));
}

/** What a launch without a port cannot do, refused before anything starts. */
function checkPortless(s: LaunchState): void {
  const o = s.o;
  const no = (what: string) => new BerthError(EXIT.USAGE, `${s.name}: a portless launch ${what}`);
  if (o.reservation || o.portSet || o.ports || hasSourceOptions(o)) throw no('takes no port source, ports or reservation');
  if (s.handoff === 'fd') throw no('has no socket to hand over (handoff fd)');
  if (s.spec?.kind === 'tcp') throw no('cannot use --ready tcp: there is no port to connect to; use cmd:COMMAND');
  if (s.subst) {
    const uses = (t: string) => t.includes('{port}');
    if (o.command.some(uses)) throw no('has no {port} to fill into the command');
    if (s.spec && uses(s.spec.kind === 'http' ? s.spec.url : s.spec.command)) throw no(`has no {port} to fill into the ready probe ${formatReadySpec(s.spec)}`);
  }
}

/** A named set (ports/portSet) that cannot work, and `{ports.…}` that names no port of it: 64 before anything is leased. */
function checkPortSet(s: LaunchState): void {
  const o = s.o;
  const no = (what: string) => new BerthError(EXIT.USAGE, `${s.name}: ${what}`);
  if (o.ports && o.portSet) throw no('give ports (to be reserved) or portSet (reserved), not both');
  if ((o.ports || o.portSet) && o.reservation) throw no('give a reservation or a port set, not both');
  let names: string[];
  if (o.ports) {
    const problem = portSetProblem(o.ports);
    if (problem !== undefined) throw no(`--ports ${problem}`);
    if (!s.learnPrimary && o.ports[0]!.kind !== 'single')
      throw no(
        `--ports: the first port "${o.ports[0]!.name}" is the primary ({port}, ownership, readiness) and must be a single port; put blocks after it, e.g. ` +
          `--ports http,${o.ports[0]!.name}=block:N`,
      );
    names = o.ports.map((e) => e.name);
    const one = o.port ?? (typeof o.source === 'object' && o.source.kind === 'port' ? o.source.port : undefined);
    if (one !== undefined && o.ports.length > 1) {
      throw no(
        `--port ${one} is one port, but --ports ${o.ports.map((e) => e.name).join(',')} needs ${o.ports.length} entries of their own: give --range LO-HI or ` +
          `a --layout band instead`,
      );
    }
  } else if (o.portSet) {
    const first = o.portSet.assigned[0];
    if (!s.learnPrimary && first?.kind !== 'single')
      throw no(`the port set's first entry${first ? ` "${first.name}"` : ''} is the primary and must be a single port`);
    names = o.portSet.assigned.map((a) => a.name);
  } else {
    names = s.learnPrimary ? [] : IMPLICIT_SET.map((e) => e.name);
  }
  names.push(...(o.learn ?? []).map((e) => e.name));
  if (!s.subst) return;
  const texts: [string, string][] = o.command.map((t) => ['the command', t]);
  if (s.spec && s.spec.kind !== 'tcp') texts.push(['the ready probe', s.spec.kind === 'http' ? s.spec.url : s.spec.command]);
  for (const [where, text] of texts) {
    const problem = portPlaceholderProblem(text, names);
    if (problem !== undefined) throw no(`${where}: ${problem}`);
  }
}

/** Learned ports: patterns that compile, and no command that names a port not known before it runs. */
function checkLearn(s: LaunchState): void {
  const o = s.o;
  if (!o.learn || o.learn.length === 0) return;
  const no = (what: string) => new BerthError(EXIT.USAGE, `${s.name}: ${what}`);
  if (s.portless) throw no('a portless launch learns no port');
  if (s.handoff === 'fd') throw no('a learned port is bound by the service itself: there is no socket to hand over (use the release handoff)');
  const problem = learnEntriesProblem(o.learn);
  if (problem !== undefined) throw no(problem);
  if (!s.subst) return;
  const learned = o.learn.map((e) => e.name);
  for (const [i, word] of o.command.entries()) {
    const named = (s.learnPrimary && word.includes('{port}') ? ['{port}'] : []).concat(
      learned.filter((n) => word.includes(`{ports.${n}}`) || word.includes(`{ports.${n}.`)).map((n) => `{ports.${n}}`),
    );
    if (named.length > 0)
      throw no(
        `command word ${i + 1} names ${named[0]}, a port the service chooses itself (learn): it is known only once the service listens on it; the ready ` +
          `probe and dependents may name it, the command cannot`,
      );
  }
}

/** The run folder's <stream>.log, or the caller's file (appended to) when one is given. */
function openLog(
  s: LaunchState,
  stream: 'stdout' | 'stderr',
  callerPath: string | undefined,
  through: NodeJS.WritableStream | null,
  kick: (chunk: Buffer) => void,
): OutputTee {
  const path = callerPath ?? join(s.runDir!.path, `${stream}.log`);
  try {
    const tee = new OutputTee(path, through, kick, callerPath !== undefined);
    if (callerPath !== undefined) s.callerLogs.add(tee);
    tee.onLogError = (e) => logWriteFailed(s, tee, stream, e);
    return tee;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    throw new BerthError(
      EXIT.IOERR,
      `${s.name}: cannot open the ${stream} log ${path} (${code}); give a writable ${callerPath !== undefined ? 'log path' : '--diag-dir'}`,
      { path },
    );
  }
}
