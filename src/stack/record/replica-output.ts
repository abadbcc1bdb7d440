import { Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

/*
 * Where a replica's output goes besides its log (which launch() writes): an OutputFanout is
 * launch's passthrough stream, giving each chunk to a job's passthrough or `--follow`.
 */

/** Gets every chunk; flush() at the replica's end (a last partial line). */
export interface ChunkConsumer {
  push(chunk: Buffer): void;
  flush?(): void;
}

export class OutputFanout extends Writable {
  constructor(private readonly consumers: readonly ChunkConsumer[]) {
    super();
  }

  /** Nobody to give output to: launch() needs no passthrough. */
  get idle(): boolean {
    return this.consumers.length === 0;
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (error?: Error | null) => void): void {
    for (const c of this.consumers) {
      try {
        c.push(chunk);
      } catch {
        // a broken consumer (closed terminal) must not stop the others
      }
    }
    done();
  }

  /** The replica has ended for good: consumers show a last partial line. */
  finish(): void {
    for (const c of this.consumers) {
      try {
        c.flush?.();
      } catch {
        // as above
      }
    }
  }
}

/** Cuts a byte stream into whole lines (UTF-8 safe across chunks) for `emit`; flush() emits a last partial line. */
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

/** A LineBuffer that prefixes every line, and ends a last partial one (other replicas' lines follow it). */
export class LinePrefixer extends LineBuffer {
  constructor(prefix: string, emit: (text: string) => void) {
    super((text) => {
      const lines = text.endsWith('\n') ? text.slice(0, -1) : text;
      emit(prefix + lines.split('\n').join(`\n${prefix}`) + '\n');
    });
  }
}
