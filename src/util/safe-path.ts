import { lstatSync, mkdirSync, readlinkSync, type Stats } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/*
 * Each component of a path berth writes under must be one only the caller or root can change:
 * another user's symlink (`/tmp/shared/d -> /tmp/victim`), directory, or non-sticky writable
 * directory would let root's files land in a victim's tree. fs.protected_symlinks covers only
 * sticky directories and may be off. Missing components are made 0700, each checked after its mkdir.
 */

/** Why a component of a path is refused: `at` is the component, `why` says what it is. */
export class UnsafePathError extends Error {
  constructor(
    readonly at: string,
    readonly why: string,
  ) {
    super(`${at} ${why}`);
    this.name = 'UnsafePathError';
  }
}

// process.getuid is absent only on Windows, which berth does not support.
export const myUid = (): number => process.getuid?.() ?? 0;
const trusted = (uid: number): boolean => uid === myUid() || uid === 0;
const MAX_LINKS = 40; // as the kernel's ELOOP limit

/**
 * Refuses a directory we pass through whose entries someone else could replace. In a sticky
 * one (like /tmp) others cannot rename or remove an entry of ours or root's; an entry of
 * theirs is refused when the walk reaches it (link or directory of another user).
 */
function judgeDir(path: string, st: Stats): void {
  if (!trusted(st.uid)) throw new UnsafePathError(path, `is a directory of uid ${st.uid}, who could replace what is inside it`);
  if ((st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0) {
    const mode = (st.mode & 0o7777).toString(8).padStart(4, '0');
    throw new UnsafePathError(path, `is writable by others (mode ${mode}, not sticky), so what is inside it could be replaced`);
  }
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** mkdir -p `path`, refusing (UnsafePathError) any component others control; returns the real path reached. */
export function makeDirsSafely(path: string): string {
  return walk(path, true);
}

/** The same judgement of every existing component of `path`, creating nothing. */
export function checkPathSafely(path: string): void {
  walk(path, false);
}

function walk(path: string, create: boolean): string {
  const todo = resolve(path).split('/').filter((p) => p !== '');
  let cur = '/';
  let links = 0;
  while (todo.length > 0) {
    const name = todo.shift()!;
    if (name === '.') continue;
    if (name === '..') {
      cur = dirname(cur); // cur holds no links (each was expanded), so ".." is textual here
      continue;
    }
    const next = join(cur, name);
    let st = lstatOrUndefined(next);
    if (st === undefined) {
      judgeDir(cur, lstatSync(cur)); // before creating anything in it
      if (!create) return next;
      try {
        mkdirSync(next, { mode: 0o700 });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      st = lstatSync(next); // what is there now, ours or planted meanwhile: judged below
    }
    judgeDir(cur, lstatSync(cur));
    if (st.isSymbolicLink()) {
      if (!trusted(st.uid)) throw new UnsafePathError(next, `is a symbolic link of uid ${st.uid} (another user's link could send what berth writes anywhere)`);
      if (++links > MAX_LINKS) throw new UnsafePathError(next, 'is one of too many symbolic links (a loop?)');
      const target = readlinkSync(next);
      if (target.startsWith('/')) cur = '/';
      todo.unshift(...target.split('/').filter((p) => p !== ''));
      continue;
    }
    if (todo.length > 0 && !st.isDirectory()) {
      if (!create) return next; // the write says what is wrong (ENOTDIR)
      throw new UnsafePathError(next, 'is not a directory');
    }
    cur = next;
  }
  return cur;
}
