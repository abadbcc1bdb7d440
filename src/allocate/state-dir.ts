import { lstatSync, mkdirSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { BerthError, EXIT } from '../errors.js';

/*
 * The lease directory is the only shared state between allocators, so anyone who can
 * write into it (or redirect it with a symlink) can steal or forge leases. It is private
 * to the user: created 0700, and every use re-checks type, owner and mode with lstat.
 */

/** Base directory for leases: $BERTH_STATE_DIR, else $XDG_RUNTIME_DIR/berth, else /tmp/berth-<uid>. */
export function resolveStateDir(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env.BERTH_STATE_DIR;
  if (explicit !== undefined && explicit !== '') return explicit;
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime !== undefined && runtime !== '') return join(runtime, 'berth');
  return `/tmp/berth-${currentUid()}`;
}

function currentUid(): number {
  // process.getuid is absent only on Windows, which berth does not support.
  return process.getuid?.() ?? 0;
}

/** "net:[4026531833]" -> "net-4026531833": ports (and so leases) are per network namespace. */
export function netnsDirName(netns: string): string {
  const m = /^net:\[(\d+)\]$/.exec(netns);
  if (m) return `net-${m[1]}`;
  // Fixture trees or odd kernels: keep it a single safe path component.
  const safe = netns.replace(/[^A-Za-z0-9_-]+/g, '_');
  return `net-${safe === '' ? 'unknown' : safe}`;
}

function refuse(path: string, what: string, todo: string): BerthError {
  return new BerthError(EXIT.IOERR, `lease directory ${path} ${what}; ${todo}`, { path });
}

/** Throws BerthError(74) unless `path` is a real directory owned by us and not writable by others. */
export function checkPrivateDir(path: string): Stats {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (e) {
    throw refuse(path, `cannot be examined (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, 'check the path and its parents, or set BERTH_STATE_DIR to a private directory');
  }
  const uid = currentUid();
  if (st.isSymbolicLink()) {
    throw refuse(path, 'is a symbolic link (someone could redirect leases)', `remove it (rm ${path}) or set BERTH_STATE_DIR to a private directory`);
  }
  if (!st.isDirectory()) {
    throw refuse(path, 'exists but is not a directory', `remove it or set BERTH_STATE_DIR to a private directory`);
  }
  if (st.uid !== uid) {
    throw refuse(path, `is owned by uid ${st.uid}, not by you (uid ${uid})`, 'set BERTH_STATE_DIR to a directory you own (mode 0700)');
  }
  if ((st.mode & 0o022) !== 0) {
    const mode = (st.mode & 0o7777).toString(8).padStart(4, '0');
    throw refuse(path, `is writable by group or others (mode ${mode}), so others could forge or remove leases`, `run: chmod 700 ${path}`);
  }
  return st;
}

function makeDir(path: string, recursive: boolean): void {
  try {
    mkdirSync(path, { mode: 0o700, recursive });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return; // checked right after
    throw refuse(path, `cannot be created (${code ?? (e as Error).message})`, 'check permissions of its parent, or set BERTH_STATE_DIR to a writable private directory');
  }
}

/**
 * Create (0700) and check the base directory and its per-namespace subdirectory; returns
 * the subdirectory, where lease files live. Throws BerthError(EXIT.IOERR) when unsafe.
 */
export function openStateDir(dir: string, netns: string): string {
  ensureDir(dir, true);
  checkPrivateDir(dir);
  const sub = join(dir, netnsDirName(netns));
  ensureDir(sub, false);
  checkPrivateDir(sub);
  return sub;
}

/**
 * mkdir only when nothing is there: this runs on every allocation, and mkdir of an
 * existing directory costs a thrown EEXIST (and, recursive, a stat). Whatever is there is
 * judged by checkPrivateDir right after, as before; a directory made meanwhile by another
 * process is fine (makeDir ignores EEXIST).
 */
function ensureDir(path: string, recursive: boolean): void {
  if (lstatSync(path, { throwIfNoEntry: false }) === undefined) makeDir(path, recursive);
}
