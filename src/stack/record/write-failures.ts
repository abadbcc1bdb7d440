import { EXIT } from '../../errors.js';
import { writeErrorText } from '../../launch/write-failed.js';

/*
 * Writes that failed while the stack ran (a full disk): each file said once, at once; the stack
 * runs on (a job is not stopped over its logs), but a status of 0 becomes 74, so a run whose
 * record is incomplete never passes for a clean one.
 */

export interface WriteFailure {
  path: string;
  /** "no space left on the device (ENOSPC)" */
  error: string;
  /** When it first failed (ISO 8601 UTC). */
  at: string;
}

export class WriteFailures {
  /** In the order they first failed, each file once. */
  readonly list: WriteFailure[] = [];
  readonly exitCode = EXIT.IOERR;

  constructor(private readonly say: (text: string) => void) {}

  /** A write to `path` failed (said once per file); `what` is what is lost ("the rest of the log"). */
  report(path: string, error: unknown, what = 'the file is incomplete'): void {
    if (this.list.some((f) => f.path === path)) return;
    const text = typeof error === 'string' ? error : writeErrorText(error);
    this.list.push({ path, error: text, at: new Date().toISOString() });
    this.say(
      `berth: cannot write ${path}: ${text}; ${what}; berth will exit 74 unless the stack fails otherwise (free space there, or give another --run-dir)`,
    );
  }

  get any(): boolean {
    return this.list.length > 0;
  }
}
