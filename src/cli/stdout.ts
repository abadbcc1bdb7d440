import { readFileSync, readlinkSync, writeSync } from 'node:fs';
import { BerthError, EXIT } from '../errors.js';

/*
 * stdout for output that must arrive (`berth port`'s ports are its caller's only record of a lease):
 * a failed write is an error the command sees, not a stream 'error' event after it exited 0.
 */

/** O_ACCMODE bits of an fdinfo "flags:" line (octal). */
const O_ACCMODE = 0o3;
const O_RDWR = 0o2;

/**
 * stdout was closed when berth started: Node.js replaces a closed fd 0-2 with /dev/null opened
 * read-write, while a shell's `>/dev/null` opens it write-only (Python's DEVNULL counts as closed).
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

/** All of `text` to stdout, rejecting with the error code: write(2) first; a full non-blocking pipe takes the rest via process.stdout. */
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
