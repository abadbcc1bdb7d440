import { closeSync, fchownSync, fsyncSync, lstatSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileKind, UnsafeFileError } from './safe-file.js';
import { checkPathSafely, myUid, UnsafePathError } from './safe-path.js';

/*
 * rename() replaces whatever has the name (`berth doctor --html /dev/full` as root would swap the
 * device for a file), so only nothing or a regular file of the caller's may be replaced; a symlink
 * is refused too. For another user (`owner`: a template in a dir_owner's directory) the folders
 * above are judged, the directory must be theirs (or ours), and the O_EXCL temp file is theirs.
 */

/** Who a file is written for (chown), when not the caller. */
export interface FileOwner {
  uid: number;
  gid: number;
}

/** Throws UnsafeFileError unless `path` is missing or a regular file owned by the caller (or by `owner`, see above). */
export function checkReplaceable(path: string, owner?: FileOwner): void {
  try {
    // no other user's link or directory on the way
    if (owner === undefined) checkPathSafely(path);
    else {
      checkPathSafely(dirname(path)); // judges every folder above the owner's directory
      const d = lstatSync(dirname(path));
      if (d.isSymbolicLink() || !d.isDirectory() || (d.uid !== owner.uid && d.uid !== myUid())) {
        throw new UnsafeFileError(
          path,
          `cannot be written safely: ${dirname(path)} is ${d.isSymbolicLink() ? 'a symbolic link' : !d.isDirectory() ? fileKind(d) : `a directory of uid ` +
            `${d.uid}`}, not a directory of uid ${owner.uid} or yours`,
        );
      }
    }
  } catch (e) {
    if (e instanceof UnsafePathError)
      throw new UnsafeFileError(path, `cannot be written safely: ${e.message}; use a path whose every directory and link is yours or root's`);
    throw e;
  }
  let st;
  try {
    st = lstatSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (!st.isFile())
    throw new UnsafeFileError(path, `is ${fileKind(st)}, not a regular file; berth replaces only a regular file of yours (choose another path)`);
  if (st.uid !== myUid() && st.uid !== owner?.uid)
    throw new UnsafeFileError(
      path,
      `is a file of uid ${st.uid}, not yours (uid ${myUid()}); berth replaces only a regular file of yours (choose another path)`,
    );
}

/** Removes `path` if it is a regular file of the caller's (missing is fine); refuses anything else. */
export function removeReplaceable(path: string): void {
  checkReplaceable(path);
  try {
    unlinkSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

/**
 * Write a file under a temporary name in the same directory, then rename: readers never see
 * it half-written. What is at `path` must be nothing or a regular file of the caller's.
 */
export function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o600, owner?: FileOwner): void {
  checkReplaceable(path, owner);
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'wx', mode);
  try {
    if (owner !== undefined) fchownSync(fd, owner.uid, owner.gid);
    writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    try { unlinkSync(tmp); } catch { /* already gone */ }
    throw e;
  }
  closeSync(fd);
  try {
    checkReplaceable(path, owner); // narrows the window for something planted while we wrote
    renameSync(tmp, path);
  } catch (e) {
    try { unlinkSync(tmp); } catch { /* already gone */ }
    throw e;
  }
}
