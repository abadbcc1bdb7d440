import { lstatSync, mkdirSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import { BerthError, EXIT } from '../errors.js';
import { makeDirsSafely, myUid, UnsafePathError } from './safe-path.js';

/*
 * Directories only their user may write (a run directory, a --diag-dir): created 0700, each use
 * re-checked with lstat. A shared directory (sticky or world-writable) is never to be "fixed" with
 * chmod (that breaks the host when followed as root): the advice is a private subdirectory.
 */

export interface PrivateDirWords {
  /** "run folder" */
  name: string;
  /** What a symlink in its place would allow: "its logs could be redirected". */
  linkRisk: string;
  /** What others who can write into it could do: "replace its logs and diagnostics". */
  writeRisk: string;
  /** What to do when it cannot be examined, is a symlink, is not a directory, is someone else's, cannot be made. */
  todo: {
    unreadable: string;
    symlink: string;
    notDir: string;
    owner: string;
    create: string;
    /** How to use a private subdirectory `sub` instead of a shared one ("set BERTH_STATE_DIR=SUB"). */
    subdir?: (sub: string) => string;
  };
}

function refuse(path: string, w: PrivateDirWords, what: string, todo: string): BerthError {
  return new BerthError(EXIT.IOERR, `${w.name} ${path} ${what}; ${todo}`, { path });
}

const errCode = (e: unknown): string => (e as NodeJS.ErrnoException).code ?? (e as Error).message;

/** A private directory inside a shared one, to suggest instead of changing the shared one. */
export function privateSubdir(shared: string): string {
  return join(shared, `berth-${myUid()}`);
}

/** Sticky (like /tmp) or writable by everyone: a directory others use, whoever owns it. */
export function isSharedMode(mode: number): boolean {
  return (mode & 0o1000) !== 0 || (mode & 0o002) !== 0;
}

/** Throws BerthError(74) unless `path` is a real directory owned by us and not writable by others. */
export function checkPrivateDir(path: string, w: PrivateDirWords): Stats {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (e) {
    throw refuse(path, w, `cannot be examined (${errCode(e)})`, w.todo.unreadable);
  }
  const uid = myUid();
  if (st.isSymbolicLink()) throw refuse(path, w, `is a symbolic link (${w.linkRisk})`, w.todo.symlink);
  if (!st.isDirectory()) throw refuse(path, w, 'exists but is not a directory', w.todo.notDir);
  if (st.uid !== uid) throw refuse(path, w, `is owned by uid ${st.uid}, not by you (uid ${uid})`, w.todo.owner);
  if ((st.mode & 0o022) !== 0) {
    const mode = (st.mode & 0o7777).toString(8).padStart(4, '0');
    const sub = privateSubdir(path);
    const useSub = w.todo.subdir?.(sub) ?? `use a private subdirectory such as ${sub} (berth creates it 0700)`;
    const todo = isSharedMode(st.mode)
      ? `it is a shared directory: do not change its mode; ${useSub}`
      : `${useSub}, or, if no one else needs ${path}: chmod 700 ${path}`;
    throw refuse(path, w, `is writable by group or others (mode ${mode}), so others could ${w.writeRisk}`, todo);
  }
  return st;
}

/** mkdir 0700; false when `path` exists (only without `recursive`: then the mkdir is a lock on the name). */
export function makePrivateDir(path: string, recursive: boolean, w: PrivateDirWords): boolean {
  try {
    if (recursive) makeDirsSafely(path); // no other user's link or directory on the way
    return recursive ? mkdirParents(path) : mkdirOne(path);
  } catch (e) {
    if (e instanceof UnsafePathError) {
      throw refuse(
        path,
        w,
        `cannot be used safely: ${e.message}`,
        `use a path whose every directory and link is yours or root's, and not writable by others (see docs/run.md)`,
      );
    }
    throw refuse(path, w, `cannot be created (${errCode(e)})`, w.todo.create);
  }
}

function mkdirOne(path: string): boolean {
  try {
    mkdirSync(path, { mode: 0o700 });
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
}

/**
 * mkdir -p, each level tried once after its parent: Node's recursive mkdir spins forever where mkdir
 * says ENOENT although the parent exists (/proc/x, some FUSE and network filesystems).
 */
function mkdirParents(path: string): boolean {
  try {
    mkdirSync(path, { mode: 0o700 });
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return true; // recursive: an existing directory is no lock
    const parent = dirname(path);
    if (code !== 'ENOENT' || parent === path) throw e;
  }
  mkdirParents(dirname(path));
  mkdirOne(path);
  return true;
}
