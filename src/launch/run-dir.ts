import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { checkPrivateDir, resolveStateDir } from '../allocate/state-dir.js';
import { BerthError, EXIT } from '../errors.js';

/*
 * Each launch writes its logs as it runs into one private folder, so a failure bundle has
 * the complete output however large it is. Default: <state dir>/runs/<name>-<UTC>-<pid>,
 * next to the leases (node-local, private, checked like them).
 */

export interface RunDir {
  path: string;
  /** Made by berth under the state directory (so berth may remove it after a clean run). */
  owned: boolean;
}

function ioError(path: string, e: unknown, todo: string): BerthError {
  const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
  return new BerthError(EXIT.IOERR, `cannot create the run folder ${path} (${code}); ${todo}`, { path });
}

function stamp(d = new Date()): string {
  return d.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
}

function safeName(name: string): string {
  const s = name.replace(/[^A-Za-z0-9_.-]+/g, '_').replace(/^[.]+/, '').slice(0, 60);
  return s === '' ? 'service' : s;
}

export function createRunDir(opts: { diagDir?: string; stateDir?: string; name: string; env?: NodeJS.ProcessEnv }): RunDir {
  if (opts.diagDir !== undefined) {
    const path = resolve(opts.diagDir);
    try {
      mkdirSync(path, { recursive: true, mode: 0o700 });
      if (!statSync(path).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    } catch (e) {
      throw ioError(path, e, 'pass a writable --diag-dir');
    }
    return { path, owned: false };
  }
  const base = opts.stateDir ?? resolveStateDir(opts.env ?? process.env);
  const runs = join(base, 'runs');
  for (const dir of [base, runs]) {
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw ioError(dir, e, 'set BERTH_STATE_DIR to a writable private directory, or pass --diag-dir');
    }
    checkPrivateDir(dir);
  }
  const first = join(runs, `${safeName(opts.name)}-${stamp()}-${process.pid}`);
  for (let attempt = 0; ; attempt++) {
    const path = attempt === 0 ? first : `${first}-${randomBytes(3).toString('hex')}`;
    try {
      mkdirSync(path, { mode: 0o700 });
      return { path, owned: true };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 5) throw ioError(path, e, 'set BERTH_STATE_DIR to a writable private directory, or pass --diag-dir');
    }
  }
}

export function removeRunDir(dir: RunDir): void {
  if (!dir.owned) return;
  try {
    rmSync(dir.path, { recursive: true, force: true });
  } catch {
    // best effort: a leftover log folder is harmless
  }
}
