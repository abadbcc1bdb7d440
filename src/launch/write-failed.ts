import type { OutputTee } from './output.js';
import { iso, type LaunchState } from './state.js';

/*
 * A write that failed while the service ran (its log on a full disk, a quota, an I/O error):
 * the output still passes through, but the file is incomplete. Said at once, once per file,
 * as a 'write-failed' event (`berth run` prints it, a stack records it), and kept in the exit
 * (ExitInfo.writeFailed), so that `berth run` exits 74 where it would exit 0.
 */

const REASONS: Record<string, string> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EIO: 'input/output error',
  EROFS: 'read-only file system',
  EFBIG: 'file too large',
};

/** "no space left on the device (ENOSPC)" */
export function writeErrorText(e: unknown): string {
  const code = (e as NodeJS.ErrnoException)?.code;
  if (code === undefined) return (e as Error)?.message ?? String(e);
  return `${REASONS[code] ?? code} (${code})`;
}

/** The tee's log could not be written: said once (the tee closes its log after the first failure). */
export function logWriteFailed(s: LaunchState, tee: OutputTee, stream: 'stdout' | 'stderr', e: unknown): void {
  if (s.writeFailed.some((f) => f.path === tee.logPath)) return;
  const error = writeErrorText(e);
  s.writeFailed.push({ path: tee.logPath, error });
  const message = `${s.name}: cannot write ${tee.logPath}: ${error}; the rest of the service's ${stream} is not in it`;
  s.emit({ type: 'write-failed', path: tee.logPath, error, message, t: iso() });
}
