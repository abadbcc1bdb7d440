import { readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { BerthError, EXIT } from '../errors.js';
import { checkPrivateDir, makePrivateDir, type PrivateDirWords } from '../util/private-dir.js';

/**
 * Base directory for berth's private state (run directories; never leases, which are the
 * network namespace's: docs/leases.md): $BERTH_STATE_DIR, else $XDG_RUNTIME_DIR/berth, else /tmp/berth-<uid>.
 */
export function resolveStateDir(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env.BERTH_STATE_DIR;
  if (explicit !== undefined && explicit !== '') return explicit;
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime !== undefined && runtime !== '') return join(runtime, 'berth');
  // process.getuid is absent only on Windows, which berth does not support.
  return `/tmp/berth-${process.getuid?.() ?? 0}`;
}

/*
 * Each launch writes its logs as it runs into one private folder (0700, checked on every use), so a
 * bundle has the whole output: <state dir>/runs/<name>-<UTC>-<pid>, or a --diag-dir, which follows a
 * stack's --run-dir rules and holds no earlier run (an old diagnostics.json beside new logs misleads,
 * and berth never deletes evidence).
 */

export interface RunDir {
  path: string;
  /** Made by berth under the state directory (so berth may remove it after a clean run). */
  owned: boolean;
}

/** What a run folder holds; any of them there already means an earlier run. */
export const RUN_FILES: readonly string[] = ['diagnostics.json', 'stdout.log', 'stderr.log'];

const DIAG_WORDS: PrivateDirWords = {
  name: '--diag-dir',
  linkRisk: 'its logs and diagnostics could be redirected',
  writeRisk: 'replace its logs and diagnostics',
  todo: {
    unreadable: 'check the path and its parents, or give another --diag-dir',
    symlink: 'give the real path with --diag-dir, or remove the link',
    notDir: 'give another --diag-dir',
    owner: 'give a --diag-dir you own',
    create: 'check permissions of its parent, or give a writable --diag-dir',
    subdir: (sub) => `give --diag-dir ${sub} (berth creates it 0700)`,
  },
};

const STATE_WORDS: PrivateDirWords = {
  name: 'run folder',
  linkRisk: 'its logs could be redirected',
  writeRisk: 'replace its logs and diagnostics',
  todo: {
    unreadable: 'check the path and its parents, set BERTH_STATE_DIR to a private directory, or pass --diag-dir',
    symlink: 'remove the link, set BERTH_STATE_DIR to a private directory, or pass --diag-dir',
    notDir: 'remove it, set BERTH_STATE_DIR to a private directory, or pass --diag-dir',
    owner: 'set BERTH_STATE_DIR to a directory you own (mode 0700), or pass --diag-dir',
    create:
      'check permissions of its parent (an XDG_RUNTIME_DIR left from another user, as after su, is not usable: unset it), set BERTH_STATE_DIR to a writable ' +
        'private directory, or pass --diag-dir',
    subdir: (sub) => `set BERTH_STATE_DIR=${sub} (berth creates it 0700), or pass --diag-dir`,
  },
};

function stamp(d = new Date()): string {
  return d.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
}

function safeName(name: string): string {
  const s = name.replace(/[^A-Za-z0-9_.-]+/g, '_').replace(/^[.]+/, '').slice(0, 60);
  return s === '' ? 'service' : s;
}

/** A caller's folder: private, and holding no earlier run (exit 64: give another one). */
function useDiagDir(dir: string): RunDir {
  const path = resolve(dir);
  makePrivateDir(path, true, DIAG_WORDS);
  checkPrivateDir(path, DIAG_WORDS);
  let names: string[];
  try {
    names = readdirSync(path);
  } catch (e) {
    throw new BerthError(
      EXIT.IOERR,
      `--diag-dir ${path} cannot be listed (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); give another --diag-dir`,
      { path },
    );
  }
  const old = names.filter((n) => RUN_FILES.includes(n));
  if (old.length > 0) {
    throw new BerthError(
      EXIT.USAGE,
      `--diag-dir ${path} already holds a run (${old.join(', ')}); give a new --diag-dir (berth never mixes two runs in one folder, nor deletes the old one)`,
      { path },
    );
  }
  return { path, owned: false };
}

export function createRunDir(opts: { diagDir?: string; stateDir?: string; name: string; env?: NodeJS.ProcessEnv }): RunDir {
  if (opts.diagDir !== undefined) return useDiagDir(opts.diagDir);
  const base = opts.stateDir ?? resolveStateDir(opts.env ?? process.env);
  const runs = join(base, 'runs');
  makePrivateDir(base, true, STATE_WORDS);
  checkPrivateDir(base, STATE_WORDS);
  makePrivateDir(runs, false, STATE_WORDS);
  checkPrivateDir(runs, STATE_WORDS);
  const first = join(runs, `${safeName(opts.name)}-${stamp()}-${process.pid}`);
  for (let attempt = 0; attempt <= 5; attempt++) {
    const path = attempt === 0 ? first : `${first}-${randomBytes(3).toString('hex')}`;
    // Non-recursive: a name taken meanwhile is tried again under another.
    if (makePrivateDir(path, false, STATE_WORDS)) return { path, owned: true };
  }
  throw new BerthError(
    EXIT.IOERR,
    `cannot create a run folder under ${runs}: every name tried exists; set BERTH_STATE_DIR to a writable private directory, or pass --diag-dir`,
    { path: runs },
  );
}

export function removeRunDir(dir: RunDir): void {
  if (!dir.owned) return;
  try {
    rmSync(dir.path, { recursive: true, force: true });
  } catch {
    // best effort: a leftover log folder is harmless
  }
}
