import { BerthError, EXIT } from '../errors.js';

// A failed file-system call on a path is the machine's answer, not a bug: exit 74 with advice, no stack trace.

const VERBS: Record<string, string> = {
  lstat: 'examine',
  stat: 'examine',
  access: 'examine',
  open: 'open',
  read: 'read',
  write: 'write',
  mkdir: 'create',
  rmdir: 'remove',
  unlink: 'remove',
  rename: 'rename',
  link: 'link',
  scandir: 'list',
  readlink: 'read the link',
  copyfile: 'copy',
  chmod: 'change the mode of',
  fsync: 'write',
};

const REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOENT: 'no such file or directory',
  ENOTDIR: 'a part of the path is not a directory',
  EISDIR: 'it is a directory',
  ELOOP: 'too many symbolic links',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EEXIST: 'it exists already',
  ENAMETOOLONG: 'the name is too long',
  EIO: 'input/output error',
};

function hint(code: string, path: string, env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_RUNTIME_DIR;
  if ((code === 'EACCES' || code === 'EPERM') && xdg && (path === xdg || path.startsWith(`${xdg}/`))) {
    return `XDG_RUNTIME_DIR=${xdg} belongs to another user (as after su or sudo): unset XDG_RUNTIME_DIR, or set BERTH_STATE_DIR to a private directory of ` +
      `yours`;
  }
  if (code === 'ENOSPC' || code === 'EDQUOT') return 'free some space there, or point berth elsewhere';
  if (code === 'EROFS') return 'point berth to a writable file system';
  return 'check the path and the permissions of it and its parents';
}

/** The BerthError(74) for a failed file-system call on a path; undefined for any other error. */
export function systemErrorAsBerth(e: unknown, env: NodeJS.ProcessEnv = process.env): BerthError | undefined {
  const x = e as NodeJS.ErrnoException | undefined;
  if (!(x instanceof Error) || typeof x.code !== 'string' || typeof x.syscall !== 'string' || typeof x.path !== 'string') return undefined;
  if (x.syscall.startsWith('spawn')) return undefined; // a launch's own failure, reported by the launcher
  const verb = VERBS[x.syscall] ?? x.syscall;
  const reason = REASONS[x.code] ?? x.code;
  return new BerthError(EXIT.IOERR, `cannot ${verb} ${x.path}: ${reason} (${x.code}); ${hint(x.code, x.path, env)}`, {
    path: x.path,
    code: x.code,
    syscall: x.syscall,
  });
}
