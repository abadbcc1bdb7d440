import { readdirSync, type Stats } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { BerthError, EXIT } from '../../errors.js';
import { checkPrivateDir, makePrivateDir, type PrivateDirWords } from '../../util/private-dir.js';
import { RunDir } from './stack-run-dir.js';

/*
 * Where a `berth up` run directory goes and how it is made: --run-dir or
 * ./berth-runs/<UTC timestamp>, private like berth's run folders (created 0700, then
 * checked for type, owner and mode), and never one that holds an earlier run.
 */

/** 2026-11-29T22:49:50.123Z → 20261129T224950Z */
export function runStamp(now: Date): string {
  return now.toISOString().replace(/\.\d+Z$/, 'Z').replace(/[-:]/g, '');
}

/** Default run directory: ./berth-runs/<UTC timestamp> (a suffix -2, -3 … is added when taken). */
export function defaultRunDir(cwd: string = process.cwd(), now: Date = new Date()): string {
  return join(resolve(cwd), 'berth-runs', runStamp(now));
}

const WORDS: PrivateDirWords = {
  name: 'run directory',
  linkRisk: 'its logs could be redirected',
  writeRisk: 'alter logs and endpoints',
  todo: {
    unreadable: 'check the path and its parents, or give another --run-dir',
    symlink: 'give the real path with --run-dir, or remove the link',
    notDir: 'give another --run-dir',
    owner: 'give a --run-dir you own',
    create: 'check permissions of its parent, or give a writable --run-dir',
    subdir: (sub) => `give --run-dir ${sub} (berth creates it 0700)`,
  },
};

/** Throws BerthError(74) unless `path` is a real directory of ours that others cannot write. */
export function checkRunDir(path: string): Stats {
  return checkPrivateDir(path, WORDS);
}

const mkdirPrivate = (path: string, recursive: boolean): boolean => makePrivateDir(path, recursive, WORDS);

export interface RunDirOptions {
  /** --run-dir; default ./berth-runs/<UTC timestamp>. */
  dir?: string;
  /** The stack file as given (recorded in endpoints.json). */
  stack: string;
  cwd?: string;
  now?: Date;
  /** The directory holds this stack's earlier generation (an agent's, across nodes): go on in it. */
  continues?: boolean;
}

/** Files that mark a run directory as used. */
export const PREVIOUS_RUN: readonly string[] = ['endpoints.json', 'events.jsonl'];

/**
 * Creates (0700) and checks the directory for a new run: --run-dir may exist (a job script
 * may make it) but must be private and must not hold any of `previous`; the default one,
 * berth-runs/<UTC timestamp> under `cwd`, is always new. Returns its absolute path.
 */
export function makeRunDir(opts: Omit<RunDirOptions, 'stack'>, previous: readonly string[] = PREVIOUS_RUN): string {
  const cwd = resolve(opts.cwd ?? process.cwd());
  if (opts.dir !== undefined) {
    const path = resolve(cwd, opts.dir);
    mkdirPrivate(path, true);
    checkRunDir(path);
    const old = readdirSync(path).filter((n) => previous.includes(n));
    if (old.length > 0 && opts.continues !== true) {
      // 64, not 74: nothing failed to be written; the directory given is the wrong one.
      throw new BerthError(EXIT.USAGE, `run directory ${path} already holds a run (${old.join(', ')}); give a new --run-dir, or remove the old one`, { path });
    }
    return path;
  }
  const first = defaultRunDir(cwd, opts.now);
  const base = dirname(first);
  mkdirPrivate(base, false);
  checkRunDir(base);
  let path = first;
  // Two stacks started in the same second get -2, -3 …: mkdir without recursion is the lock.
  for (let n = 2; !mkdirPrivate(path, false); n++) {
    if (n > 1000) {
      const message = `run directory ${first} and 1000 numbered variants exist already; clean up berth-runs/ or give --run-dir`;
      throw new BerthError(EXIT.IOERR, message, { path: first });
    }
    path = `${first}-${n}`;
  }
  checkRunDir(path);
  return path;
}

/** Creates the run directory (see makeRunDir) with its logs/ folder, and writes an empty endpoints.json. */
export function createRunDir(opts: RunDirOptions): RunDir {
  const dir = new RunDir(makeRunDir(opts), opts.stack);
  mkdirPrivate(dir.logsDir, false);
  checkRunDir(dir.logsDir);
  dir.writeEndpoints();
  return dir;
}
