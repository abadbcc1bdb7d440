import { closeSync, fstatSync, writeSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { ignoreWriteErrors } from '../util/closed-output.js';
import { deferred } from '../util/deferred.js';
import { createNewFile, openForAppend } from '../util/safe-file.js';

/*
 * The child's stdout and stderr go through berth unchanged and, chunk by chunk, into a log
 * file with a synchronous write: when the pipe closes the file is complete, with nothing
 * left in a buffer to lose if berth exits right after.
 */

export class OutputTee {
  bytes = 0;
  /** Set when the log could not be written (e.g. disk full); the stream still passes through. */
  logError: string | undefined;
  /** Told once, when the log could not be written (write-failed.ts). */
  onLogError: ((e: unknown) => void) | undefined;
  /**
   * Where this launch's output begins in the log: 0 for a fresh file, the earlier size when
   * appending to a caller's log (a stack replica's attempts share one file).
   */
  readonly startOffset: number;
  private readonly whenClosed = deferred<void>();
  /** Settles once the pipe has closed or failed (or at attach(), when there is none). */
  readonly closed = this.whenClosed.promise;
  private fd: number | undefined;

  /** Throws the open error (the caller says which file and what to do). */
  constructor(
    readonly logPath: string,
    private readonly passthrough: NodeJS.WritableStream | null,
    private readonly onData: (chunk: Buffer) => void = () => {},
    append = false,
  ) {
    // Never through a planted symlink, FIFO or someone else's file (safe-file.ts).
    this.fd = append ? openForAppend(logPath) : createNewFile(logPath);
    this.startOffset = append ? fstatSync(this.fd).size : 0;
    // A passthrough whose reader went away (EPIPE) must not take the supervisor down.
    ignoreWriteErrors(passthrough);
  }

  attach(stream: Readable | null): void {
    const closed = () => this.whenClosed.resolve();
    if (!stream) return closed();
    stream.on('data', (chunk: Buffer) => this.write(chunk));
    stream.on('close', closed);
    stream.on('error', closed);
  }

  private write(chunk: Buffer): void {
    this.bytes += chunk.length;
    if (this.fd !== undefined) {
      try {
        let off = 0;
        while (off < chunk.length) off += writeSync(this.fd, chunk, off);
      } catch (e) {
        this.logError = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
        this.closeLog();
        this.onLogError?.(e);
      }
    }
    if (this.passthrough) {
      try {
        this.passthrough.write(chunk);
      } catch {
        // reader gone: keep logging
      }
    }
    this.onData(chunk);
  }

  closeLog(): void {
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
    this.fd = undefined;
  }
}
