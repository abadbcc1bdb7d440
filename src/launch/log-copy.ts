import { closeSync, constants, copyFileSync, openSync, readSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createNewFile } from '../util/safe-file.js';

/*
 * A launch whose logs are the caller's files (LaunchOptions.stdoutLog/stderrLog) still leaves
 * a self-contained bundle: its stdout.log/stderr.log are copies of this launch's part of those
 * files, made only when a bundle is written (never while the service runs, so output is
 * written once). A copy, not a hard link: a linked file shares the inode, and a caller that
 * appends several attempts to one log (a stack replica restarting) would make an earlier
 * bundle hold the other attempts' output and keep growing after the failure it documents.
 */

const CHUNK = 1 << 20;

/**
 * Copies `src` from byte `offset` to its current end into `dest` (through a temporary file
 * and a rename, so `dest` is never seen half written). Returns the bytes copied. Throws the
 * I/O error.
 */
export function copyLogTail(src: string, offset: number, dest: string): number {
  // A fresh name created exclusively (never a planted link); the rename replaces, never follows.
  const tmp = `${dest}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    if (offset === 0) {
      // The whole file: let the kernel copy it (copy_file_range, reflinks where supported).
      copyFileSync(src, tmp, constants.COPYFILE_EXCL);
    } else {
      copyRange(src, offset, tmp);
    }
    renameSync(tmp, dest);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  return statSync(dest).size;
}

function copyRange(src: string, offset: number, dest: string): void {
  const inFd = openSync(src, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const outFd = createNewFile(dest);
    try {
      const buf = Buffer.allocUnsafe(CHUNK);
      for (let pos = offset; ; ) {
        const n = readSync(inFd, buf, 0, CHUNK, pos);
        if (n === 0) break;
        let off = 0;
        while (off < n) off += writeSync(outFd, buf, off, n - off);
        pos += n;
      }
    } finally {
      closeSync(outFd);
    }
  } finally {
    closeSync(inFd);
  }
}
