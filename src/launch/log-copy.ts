import { closeSync, constants, copyFileSync, openSync, readSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createNewFile } from '../util/safe-file.js';

/*
 * With the caller's log files (LaunchOptions.stdoutLog/stderrLog) a bundle's stdout.log/stderr.log are
 * copies of this launch's part of them, made only when a bundle is written. Not hard links: a caller
 * appending several attempts to one log (a restarting stack replica) would make an earlier bundle hold
 * the other attempts' output, growing after the failure it documents.
 */

const CHUNK = 1 << 20;

/** `src` from byte `offset` to its end into `dest`, through a temporary file and a rename (never seen half written); returns its size. */
export function copyLogTail(src: string, offset: number, dest: string): number {
  // A fresh name created exclusively (never a planted link); the rename replaces, never follows.
  const tmp = `${dest}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    // The whole file: the kernel copies it (copy_file_range, reflinks where supported).
    if (offset === 0) copyFileSync(src, tmp, constants.COPYFILE_EXCL);
    else copyRange(src, offset, tmp);
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
