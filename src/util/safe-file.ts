import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { myUid } from './safe-path.js';
import { decodeText } from './text-bytes.js';

/*
 * Files whose path someone else may have prepared: a planted symlink, hard link or FIFO must not
 * redirect or hang a write (O_EXCL, O_NOFOLLOW), nor a FIFO or device hang or flood a read.
 */

const { O_WRONLY, O_RDONLY, O_CREAT, O_EXCL, O_APPEND, O_NOFOLLOW, O_NONBLOCK } = constants;

/** Why a file berth writes was refused; `message` says what it is ("is a symbolic link"). */
export class UnsafeFileError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
    this.name = 'UnsafeFileError';
  }
}

/** "a directory", "a FIFO (named pipe)", "a regular file" … what a stat says a path is. */
export function fileKind(st: Stats): string {
  if (st.isFile()) return 'a regular file';
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  if (st.isSymbolicLink()) return 'a symbolic link';
  return 'an unknown kind of file';
}

function openError(path: string, e: unknown): Error {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ELOOP') return new UnsafeFileError(path, 'is a symbolic link (berth does not follow links where it writes)');
  if (code === 'EEXIST') return new UnsafeFileError(path, 'exists already (berth writes only new files there)');
  if (code === 'ENXIO') return new UnsafeFileError(path, 'is a FIFO (named pipe) or a socket, not a file');
  return e as Error;
}

/** A new file (mode 0600 by default), never an existing file or link. Returns its fd. */
export function createNewFile(path: string, mode = 0o600): number {
  try {
    return openSync(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
  } catch (e) {
    throw openError(path, e);
  }
}

/**
 * Opens `path` for appending, creating it when missing. Refuses a symlink, anything but a
 * regular file (without blocking on a FIFO), a file of another user and a file with other
 * hard links (someone could have linked it to a file of ours elsewhere). Returns its fd.
 */
export function openForAppend(path: string, mode = 0o600): number {
  let fd: number;
  try {
    fd = openSync(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK, mode);
  } catch (e) {
    throw openError(path, e);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new UnsafeFileError(path, `is ${fileKind(st)}, not a regular file`);
    if (st.uid !== myUid()) throw new UnsafeFileError(path, `is owned by uid ${st.uid}, not by you (uid ${myUid()})`);
    if (st.nlink > 1) throw new UnsafeFileError(path, `has ${st.nlink} hard links (it may be another file under this name)`);
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  return fd;
}

/** Layouts and stacks larger than this are refused: no sane one comes close. */
export const MAX_INPUT_BYTES = 1 << 20;

/** Why a file the user named cannot be read as input ("is a FIFO …", "is 3.1 MiB …"). */
export class InputFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InputFileError';
  }
}

const mib = (n: number) => `${(n / (1 << 20)).toFixed(1)} MiB`;

/**
 * The UTF-8 text of a regular file of at most `max` bytes the user named, opened without blocking; at
 * most max+1 bytes are read (/proc files report no size). InputFileError for a refusal, else the open/read error.
 */
export function readInputFile(path: string, max = MAX_INPUT_BYTES): string {
  const fd = openSync(path, O_RDONLY | O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new InputFileError('it is a directory');
    if (!st.isFile()) throw new InputFileError(`it is ${fileKind(st)}, not a regular file`);
    if (st.size > max) throw new InputFileError(`it is ${mib(st.size)}; berth reads at most ${mib(max)}`);
    const buf = Buffer.allocUnsafe(max + 1);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, null);
      if (n === 0) break;
      got += n;
    }
    if (got > max) throw new InputFileError(`it holds more than ${mib(max)}; berth reads at most ${mib(max)}`);
    const d = decodeText(buf.subarray(0, got));
    if ('problem' in d) throw new InputFileError(d.problem);
    return d.text;
  } finally {
    closeSync(fd);
  }
}
