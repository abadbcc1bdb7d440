import { closeSync, openSync, writeSync } from 'node:fs';
import { Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

/*
 * Where a replica's output goes in a stack. The launcher hands every chunk of the child's
 * stdout/stderr to a passthrough stream as it arrives; a LogSink is that stream. It writes
 * the chunk to logs/<service>-<replica>.out|.err with a synchronous write (so the file is
 * complete the moment the launcher reports the exit: nothing sits in a buffer), then gives
 * the same chunk to the extra consumers (a job's passthrough, `--follow`).
 */

/** Gets every chunk; flush() at the replica's end (a last partial line). */
export interface ChunkConsumer {
  push(chunk: Buffer): void;
  flush?(): void;
}

export class LogSink extends Writable {
  /** Bytes written to the log. */
  bytes = 0;
  /** Set when the log could not be written (disk full…): consumers still get the output. */
  logError: string | undefined;
  private fd: number | undefined;

  constructor(
    readonly path: string,
    private readonly consumers: ChunkConsumer[] = [],
  ) {
    super();
  }

  /** Creates the file (at the replica's first start: services never started leave none). */
  open(): void {
    if (this.fd !== undefined || this.opened) return;
    this.opened = true;
    try {
      // 'a': one file per replica across restarts, attempts one after the other.
      this.fd = openSync(this.path, 'a', 0o600);
    } catch (e) {
      this.logError = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    }
  }

  private opened = false;

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (error?: Error | null) => void): void {
    this.writeChunk(chunk);
    done();
  }

  /** Synchronous: the chunk is in the file when this returns. */
  writeChunk(chunk: Buffer): void {
    if (this.fd !== undefined) {
      try {
        let off = 0;
        while (off < chunk.length) off += writeSync(this.fd, chunk, off);
        this.bytes += chunk.length;
      } catch (e) {
        this.logError = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
        this.closeFile();
      }
    }
    for (const c of this.consumers) {
      try {
        c.push(chunk);
      } catch {
        // a broken consumer (closed terminal) must not stop the log
      }
    }
  }

  /** The replica has ended for good: consumers show a last partial line, the file is closed. */
  finish(): void {
    for (const c of this.consumers) {
      try {
        c.flush?.();
      } catch {
        // as above
      }
    }
    this.closeFile();
  }

  closeFile(): void {
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
    this.fd = undefined;
  }
}

/**
 * Cuts a byte stream into whole lines (UTF-8 safe across chunk borders) and hands each
 * batch of complete lines, every one prefixed, to `emit`. flush() emits a last partial line.
 */
export class LinePrefixer {
  private readonly decoder = new StringDecoder('utf8');
  private partial = '';

  constructor(
    private readonly prefix: string,
    private readonly emit: (text: string) => void,
  ) {}

  push(chunk: Buffer): void {
    const text = this.partial + this.decoder.write(chunk);
    const end = text.lastIndexOf('\n');
    if (end < 0) {
      this.partial = text;
      return;
    }
    this.partial = text.slice(end + 1);
    const lines = text.slice(0, end).split('\n');
    this.emit(lines.map((l) => this.prefix + l).join('\n') + '\n');
  }

  flush(): void {
    const rest = this.partial + this.decoder.end();
    this.partial = '';
    if (rest !== '') this.emit(this.prefix + rest + '\n');
  }
}

/** Whole lines only, unprefixed (a job's output above a live table); flush() the rest. */
export class LineBuffer {
  private readonly decoder = new StringDecoder('utf8');
  private partial = '';

  constructor(private readonly emit: (text: string) => void) {}

  push(chunk: Buffer): void {
    const text = this.partial + this.decoder.write(chunk);
    const end = text.lastIndexOf('\n');
    if (end < 0) {
      this.partial = text;
      return;
    }
    this.partial = text.slice(end + 1);
    this.emit(text.slice(0, end + 1));
  }

  flush(): void {
    const rest = this.partial + this.decoder.end();
    this.partial = '';
    if (rest !== '') this.emit(rest);
  }
}
