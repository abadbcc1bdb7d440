import { readFileSync, readlinkSync, writeSync } from 'node:fs';
import { BerthError, EXIT } from '../errors.js';

/*
 * stdout for output that must arrive: `berth port`'s ports are the only record its caller
 * gets of a lease, so a write that fails (stdout closed, a full disk, /dev/full, a reader
 * gone) is an error the command sees, not a stream 'error' event after it has exited 0.
 */

/** O_ACCMODE bits of an fdinfo "flags:" line (octal). */
const O_ACCMODE = 0o3;
const O_RDWR = 0o2;

/**
 * stdout was closed when berth started. Node.js replaces a closed fd 0-2 with /dev/null
 * opened read-write before any JavaScript runs, so that is what it looks like: a shell's
 * `>/dev/null` opens it write-only. (Python's subprocess.DEVNULL opens it read-write too,
 * and is taken the same way: output discarded on purpose is `>/dev/null`.)
 */
export function stdoutClosed(): boolean {
  try {
    if (readlinkSync('/proc/self/fd/1') !== '/dev/null') return false;
    const flags = /^flags:\s+([0-7]+)$/m.exec(readFileSync('/proc/self/fdinfo/1', 'latin1'));
    return flags !== null && (parseInt(flags[1]!, 8) & O_ACCMODE) === O_RDWR;
  } catch {
    return false;
  }
}

/** The error of output that could not be written, with what became of it. */
export function unwritable(code: string, what: string): BerthError {
  return new BerthError(EXIT.IOERR, `cannot write to stdout (${code}): ${what}`);
}

/**
 * Write all of `text` to stdout, resolving once it is written and rejecting with the
 * write's error code when it cannot be. write(2) first, which costs nothing; a non-blocking
 * pipe that is full goes through process.stdout, from the first byte not yet written.
 */
export function writeAllStdout(text: string): Promise<void> {
  const bytes = Buffer.from(text);
  let done = 0;
  try {
    while (done < bytes.length) done += writeSync(1, bytes, done);
    return Promise.resolve();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'EIO';
    if (code !== 'EAGAIN') return Promise.reject(Object.assign(new Error(code), { code }));
  }
  return new Promise((resolve, reject) => {
    const fail = (e: NodeJS.ErrnoException) => reject(Object.assign(new Error(e.code ?? 'EIO'), { code: e.code ?? 'EIO' }));
    process.stdout.once('error', fail);
    process.stdout.write(bytes.subarray(done), (e) => {
      process.stdout.off('error', fail);
      if (e) fail(e as NodeJS.ErrnoException);
      else resolve();
    });
  });
}
