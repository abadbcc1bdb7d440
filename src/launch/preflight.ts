import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { BerthError, EXIT } from '../errors.js';
import { listenAddressProblem } from '../util/address.js';
import { DEADLINE, GRACE, timerProblem } from '../util/duration.js';
import { fileKind } from '../util/safe-file.js';
import { optionName } from './launch-options.js';
import type { LaunchOptions } from './launch-api.js';

/*
 * What spawn() would only find out by failing, checked before anything is leased (exit 64):
 * spawn's own errors (ENOTDIR, E2BIG, ENOENT for a missing cwd) name neither the file nor the
 * fix, and blame the command for its directory.
 */

const no = (what: string) => new BerthError(EXIT.USAGE, what);

/** Linux refuses a single argument or environment string longer than this (MAX_ARG_STRLEN). */
export const MAX_ARG_STRLEN = 32 * 4096;

/**
 * exec's limit on argv + environment (fs/exec.c): a quarter of the stack limit, at most
 * 3/4 of 8 MiB, at least 128 KiB. `limitsText` is /proc/self/limits (children inherit it).
 */
export function argMax(limitsText: string | undefined): number {
  const m = /^Max stack size\s+(\S+)/m.exec(limitsText ?? '');
  const stack = m === null ? 8 << 20 : m[1] === 'unlimited' ? Infinity : Number(m[1]);
  const quarter = Number.isFinite(stack) ? Math.floor(stack / 4) : Infinity;
  return Math.max(Math.min((8 << 20) / 4 * 3, quarter), 128 << 10);
}

/** Room for what berth adds (PORT, BERTH_*, LISTEN_*, the fd shim, a filled-in {host}). */
const BERTH_ADDS = 4096;

/** Bytes exec needs for these strings: each with its NUL, plus one pointer each. */
export function execBytes(argv: readonly string[], env: NodeJS.ProcessEnv): { total: number; longest: { what: string; bytes: number } } {
  let total = 0;
  let longest = { what: '', bytes: 0 };
  const add = (what: string, s: string) => {
    const bytes = Buffer.byteLength(s) + 1;
    total += bytes + 8;
    if (bytes > longest.bytes) longest = { what, bytes };
  };
  argv.forEach((a, i) => add(`argument ${i}`, a));
  for (const [k, v] of Object.entries(env)) if (v !== undefined) add(`environment variable ${k}`, `${k}=${v}`);
  return { total, longest };
}

const kib = (n: number) => `${Math.ceil(n / 1024)} KiB`;

/** The command at its largest once berth fills it in: a port is at most 5 digits, `{ports.…}` at most "65535-65535". */
export function filledAtMost(text: string, known: { name: string; host: string }): string {
  return text
    .split('{port}').join('65535')
    .split('{name}').join(known.name)
    .split('{host}').join(known.host)
    .replace(/\{ports\.[^{}]*\}/g, '65535-65535');
}

/**
 * Why exec would refuse `command` (E2BIG) with this environment, undefined when it fits.
 * `original`: the command as written, when `command` is filled in (the message then blames berth).
 */
export function execSizeProblem(
  command: readonly string[],
  env: NodeJS.ProcessEnv,
  limitsText: string | undefined,
  original?: readonly string[],
): string | undefined {
  const grown = original !== undefined && command.some((a, i) => a !== original[i]) ? ' once berth fills in its placeholders' : '';
  const { total, longest } = execBytes(command, env);
  if (longest.bytes > MAX_ARG_STRLEN) {
    return `cannot start ${command[0]}: its ${longest.what} is ${kib(longest.bytes)}${longest.what.startsWith('argument') ? grown : ''}; Linux allows at ` +
      `most ${kib(MAX_ARG_STRLEN)} per argument or variable (pass large data in a file instead)`;
  }
  const max = argMax(limitsText);
  if (total + BERTH_ADDS > max) {
    return `cannot start ${command[0]}: its arguments and environment take ${kib(total)}${grown}; Linux allows ${kib(max)} in all (a quarter of the stack ` +
      `limit, ulimit -s) (pass large data in a file instead)`;
  }
  return undefined;
}

/** /proc/self/limits, undefined when it cannot be read (children inherit berth's limits). */
export function readLimits(): string | undefined {
  try {
    return readFileSync('/proc/self/limits', 'latin1');
  } catch {
    return undefined;
  }
}

function checkCwd(cwd: string): void {
  let why: string | undefined;
  try {
    const st = statSync(cwd);
    if (!st.isDirectory()) why = `is ${fileKind(st)}, not a directory`;
    else accessSync(cwd, constants.X_OK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    why =
      code === 'ENOENT' ? 'does not exist' : code === 'EACCES' ? 'cannot be entered (permission denied)' : `cannot be used (${code ?? (e as Error).message})`;
  }
  if (why !== undefined) throw no(`the working directory ${cwd} ${why}; give an existing directory as cwd`);
}

/** The first directory on the way to `path` that the caller may not search, if any. */
function unsearchableDir(path: string): string | undefined {
  const dirs: string[] = [];
  for (let d = dirname(path); ; d = dirname(d)) {
    dirs.unshift(d);
    if (dirname(d) === d) break;
  }
  for (const d of dirs) {
    try {
      accessSync(d, constants.X_OK);
    } catch {
      return d;
    }
  }
  return undefined;
}

/** A command given as a path: it must be an executable regular file. Names are searched in PATH later. */
function checkProgram(cmd: string, cwd: string): void {
  if (!cmd.includes('/')) return;
  const path = resolve(cwd, cmd);
  let why: string | undefined;
  try {
    const st = statSync(path);
    if (!st.isFile()) why = `is ${fileKind(st)}`;
    else accessSync(path, constants.X_OK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const closed = code === 'EACCES' ? unsearchableDir(path) : undefined;
    why =
      code === 'ENOENT'
        ? 'does not exist'
        : closed !== undefined
          ? `cannot be reached: you may not enter the directory ${closed} (it lacks x permission for you; chmod it, or put the program elsewhere)`
          : code === 'EACCES'
            ? 'has no execute permission (chmod +x it, or run it through its interpreter)'
            : `cannot be used (${code ?? (e as Error).message})`;
  }
  if (why !== undefined) throw no(`not an executable: ${cmd} ${why}`);
}

/**
 * Throws BerthError(64) for the first thing that would keep the command from starting.
 * `fill`: the command's placeholders filled in at their largest (filledAtMost), when berth fills them.
 */
export function preflight(o: LaunchOptions, fill?: (text: string) => string): void {
  for (const [flag, path] of [['--ready-file', o.readyFile], ['--diag-dir', o.diagDir]] as const)
    if (path === '') throw no(`${optionName(o, flag)} is empty: give a path`);
  if (o.bind !== undefined) {
    const problem = listenAddressProblem(o.bind);
    if (problem !== undefined) throw no(`${optionName(o, '--bind')} ${JSON.stringify(o.bind)} ${problem}`);
  }
  const timers = [
    ['ready timeout', o.readyTimeoutMs, DEADLINE],
    ['stop grace', o.stopGraceMs, GRACE],
  ] as const;
  for (const [what, ms, rule] of timers) {
    const problem = ms === undefined ? undefined : timerProblem(ms, rule);
    if (problem !== undefined) throw no(`the ${what} (${ms}ms) ${problem}`);
  }
  const cwd = o.cwd ?? process.cwd();
  if (o.cwd !== undefined) checkCwd(o.cwd);
  if (o.command[0] !== undefined) checkProgram(o.command[0], cwd);
  const tooBig = execSizeProblem(fill ? o.command.map(fill) : o.command, o.env ?? process.env, readLimits(), o.command);
  if (tooBig !== undefined) throw no(tooBig);
}
