import { closeSync, constants, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, type Stats } from 'node:fs';
import { BerthError, EXIT } from '../errors.js';

/*
 * Directories every local user writes into, like /tmp: the shared lease directory. Each
 * user must be able to create files there but remove only their own, so the directory
 * must be world-writable *and* sticky (mode 1777).
 *
 * Whoever owns such a directory can rename it, or anything in it, and could swap it for a
 * symlink between our check and our use. So it is opened once with O_NOFOLLOW|O_DIRECTORY,
 * judged by fstat of that descriptor, and then used only through /proc/self/fd/<fd>/…:
 * the kernel resolves that to the very directory we judged, whatever happens to its name
 * later (what openat() gives C programs; Node has no openat). libuv opens every file
 * O_CLOEXEC, so services berth starts never inherit the descriptor.
 */

export interface SharedDirWords {
  /** "lease directory" */
  name: string;
  /** What to do when the directory is unusable (says who must act, and never suggests changing a system directory). */
  fix: string;
}

export interface PinnedDir {
  /** The path as the user knows it, for messages. */
  path: string;
  /** /proc/self/fd/<fd>: the same directory, immune to renames and symlink swaps. */
  at: string;
  fd: number;
  stat: Stats;
  /** Owner uid when it is neither root nor the caller: that user can remove anyone's files here. */
  foreignOwner?: number;
}

const errCode = (e: unknown): string => (e as NodeJS.ErrnoException).code ?? (e as Error).message;

function refuse(path: string, w: SharedDirWords, what: string): BerthError {
  return new BerthError(EXIT.IOERR, `${w.name} ${path} ${what}; ${w.fix}`, { path });
}

/** "1777" */
export function modeText(st: Stats): string {
  return (st.mode & 0o7777).toString(8).padStart(4, '0');
}

/** Sticky, and others may create and look up files: what a directory shared by all users needs. */
export function isSharedMode(mode: number): boolean {
  return (mode & 0o1003) === 0o1003;
}

/** What /proc/self/fd/<fd> paths stand for, so messages can name the real path. */
const pinnedPaths = new Map<string, string>();
/** path -> pinned directory, so a process opens each directory once. */
const pinnedByPath = new Map<string, PinnedDir>();

/** The user's path for a path under a pinned directory (unchanged for any other path). */
export function shownPath(p: string): string {
  if (!p.startsWith('/proc/self/fd/')) return p;
  const slash = p.indexOf('/', '/proc/self/fd/'.length);
  const at = slash < 0 ? p : p.slice(0, slash);
  const real = pinnedPaths.get(at);
  return real === undefined ? p : real + p.slice(at.length);
}

function openDir(openPath: string, shown: string, w: SharedDirWords): number {
  try {
    return openSync(openPath, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (e) {
    const c = errCode(e);
    // O_DIRECTORY|O_NOFOLLOW on a symlink says ENOTDIR (or ELOOP): lstat tells which it is.
    if (c === 'ELOOP' || c === 'ENOTDIR') {
      const link = lstatSync(openPath, { throwIfNoEntry: false })?.isSymbolicLink() ?? c === 'ELOOP';
      throw refuse(shown, w, link ? 'is a symbolic link (someone could redirect what berth writes there)' : 'exists but is not a directory');
    }
    throw refuse(shown, w, `cannot be opened (${c})`);
  }
}

/**
 * Open the shared directory `openPath` (shown to users as `shown`), creating it with mode
 * 1777 when missing. Throws BerthError(74) when it is not a directory, is a symlink, or is
 * not world-writable and sticky. A directory owned by another non-root user is accepted
 * and reported in `foreignOwner` (see the README, "How leases work", for why).
 */
export function openSharedDir(openPath: string, shown: string, w: SharedDirWords): PinnedDir {
  const cached = pinnedByPath.get(shown);
  if (cached !== undefined) {
    // Still the same directory at that name? (tmpfiles cleaners or root may have replaced it.)
    const now = lstatSync(openPath, { throwIfNoEntry: false });
    if (now !== undefined && now.isDirectory() && now.ino === cached.stat.ino && now.dev === cached.stat.dev) return cached;
    pinnedByPath.delete(shown);
    pinnedPaths.delete(cached.at);
    try {
      closeSync(cached.fd);
    } catch {
      // already closed
    }
  }
  let created = false;
  if (lstatSync(openPath, { throwIfNoEntry: false }) === undefined) {
    try {
      mkdirSync(openPath, { mode: 0o1777 });
      created = true;
    } catch (e) {
      if (errCode(e) !== 'EEXIST') throw refuse(shown, w, `cannot be created (${errCode(e)})`);
    }
  }
  const fd = openDir(openPath, shown, w);
  try {
    let st = fstatSync(fd);
    const uid = process.getuid?.() ?? 0;
    // The umask took o+w from our mkdir; only the creator may (and must) set the mode.
    if (created && st.uid === uid && !isSharedMode(st.mode)) {
      fchmodSync(fd, 0o1777);
      st = fstatSync(fd);
    }
    if (!isSharedMode(st.mode)) {
      const what = (st.mode & 0o002) !== 0 ? 'is world-writable but not sticky, so any user could remove anyone’s files there' : 'is not writable by every user';
      throw refuse(shown, w, `${what} (mode ${modeText(st)}, owner uid ${st.uid}); it must be mode 1777 (sticky, like /tmp)`);
    }
    const pinned: PinnedDir = { path: shown, at: `/proc/self/fd/${fd}`, fd, stat: st };
    if (st.uid !== 0 && st.uid !== uid) pinned.foreignOwner = st.uid;
    pinnedPaths.set(pinned.at, shown);
    pinnedByPath.set(shown, pinned);
    return pinned;
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}
