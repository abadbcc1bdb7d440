import { lstatSync, mkdirSync, type Stats } from 'node:fs';
import { BerthError, EXIT } from '../errors.js';

/*
 * Directories only their user may write (the lease directory, a run directory): anyone who
 * can write into one, or swap it for a symlink, can forge what berth reads back from it. They
 * are created 0700 and every use re-checks type, owner and mode with lstat. The messages
 * name the directory and say what to do, in the words of its caller.
 */

export interface PrivateDirWords {
  /** "lease directory" */
  name: string;
  /** What a symlink in its place would allow: "someone could redirect leases". */
  linkRisk: string;
  /** What others who can write into it could do: "forge or remove leases". */
  writeRisk: string;
  /** What to do when it cannot be examined, is a symlink, is not a directory, is someone else's, cannot be made. */
  todo: { unreadable: string; symlink: string; notDir: string; owner: string; create: string };
}

function refuse(path: string, w: PrivateDirWords, what: string, todo: string): BerthError {
  return new BerthError(EXIT.IOERR, `${w.name} ${path} ${what}; ${todo}`, { path });
}

const errCode = (e: unknown): string => (e as NodeJS.ErrnoException).code ?? (e as Error).message;

/** Throws BerthError(74) unless `path` is a real directory owned by us and not writable by others. */
export function checkPrivateDir(path: string, w: PrivateDirWords): Stats {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (e) {
    throw refuse(path, w, `cannot be examined (${errCode(e)})`, w.todo.unreadable);
  }
  // process.getuid is absent only on Windows, which berth does not support.
  const uid = process.getuid?.() ?? 0;
  if (st.isSymbolicLink()) throw refuse(path, w, `is a symbolic link (${w.linkRisk})`, w.todo.symlink);
  if (!st.isDirectory()) throw refuse(path, w, 'exists but is not a directory', w.todo.notDir);
  if (st.uid !== uid) throw refuse(path, w, `is owned by uid ${st.uid}, not by you (uid ${uid})`, w.todo.owner);
  if ((st.mode & 0o022) !== 0) {
    const mode = (st.mode & 0o7777).toString(8).padStart(4, '0');
    throw refuse(path, w, `is writable by group or others (mode ${mode}), so others could ${w.writeRisk}`, `run: chmod 700 ${path}`);
  }
  return st;
}

/**
 * mkdir 0700. False when `path` exists already (seen only without `recursive`): a
 * non-recursive mkdir is a lock on the name. Whatever is there is for checkPrivateDir to
 * judge. Throws BerthError(74) for any other failure.
 */
export function makePrivateDir(path: string, recursive: boolean, w: PrivateDirWords): boolean {
  try {
    mkdirSync(path, { mode: 0o700, recursive });
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw refuse(path, w, `cannot be created (${errCode(e)})`, w.todo.create);
  }
}
