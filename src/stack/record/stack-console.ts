import { ignoreWriteErrors } from '../../util/closed-output.js';
import type { StackEvent } from './endpoints.js';
import { LineBuffer, LinePrefixer, type ChunkConsumer } from './replica-output.js';
import { canRedraw, StatusView, type StatusStream } from './status-view.js';

/*
 * Everything a running stack shows. On a live table every write goes through StatusView.print
 * so text lands above the table instead of through it; elsewhere output passes byte for byte.
 */

export type StatusMode = 'auto' | 'live' | 'plain' | 'off';

export interface ConsoleOptions {
  stdout: NodeJS.WritableStream | null;
  stderr: NodeJS.WritableStream | null;
  status: StatusMode;
  env?: NodeJS.ProcessEnv;
}

const isTTY = (s: unknown): boolean => (s as { isTTY?: boolean } | null)?.isTTY === true;

export class StackConsole {
  readonly view: StatusView | undefined;
  private readonly flushers: (() => void)[] = [];

  constructor(private readonly o: ConsoleOptions) {
    // A closed stdout or stderr ends that output, not the stack (docs/stack.md "Output").
    ignoreWriteErrors(o.stdout);
    ignoreWriteErrors(o.stderr);
    if (o.status !== 'off' && o.stderr) {
      const live = o.status === 'live' || (o.status === 'auto' && canRedraw(isTTY(o.stderr), o.env));
      this.view = new StatusView(o.stderr as unknown as StatusStream, { live, ...(o.env ? { env: o.env } : {}) });
    }
  }

  get live(): boolean {
    return this.view?.live === true;
  }

  event(e: StackEvent): void {
    this.view?.update(e);
  }

  /** One of berth's own messages (stderr), only when a status display is on. */
  message(text: string): void {
    if (!this.view || !this.o.stderr) return;
    this.view.print(text);
  }

  /** Text to a stream, above the live table when that stream shares the terminal. */
  private write(to: NodeJS.WritableStream, text: string): void {
    if (this.view && this.live && isTTY(to)) this.view.print(text, to as unknown as StatusStream);
    else {
      this.view?.flush(); // the status lines of this turn came first
      to.write(text);
    }
  }

  /** The job's stdout or stderr, unchanged (whole lines at a time above a live table). */
  passthrough(which: 'stdout' | 'stderr', wholeLines = false): ChunkConsumer | undefined {
    const to = this.o[which];
    if (!to) return undefined;
    // Whole lines: above a live table, or when several ranks of a job share the stream.
    if (wholeLines || (this.live && isTTY(to))) {
      const lines = new LineBuffer((t) => this.write(to, t));
      this.flushers.push(() => lines.flush());
      return lines;
    }
    return {
      push: (chunk) => {
        this.view?.flush(); // the status lines of this turn came first
        to.write(chunk);
      },
    };
  }

  /** `--follow` / `logs: attach`: whole lines prefixed "service/replica | ", on stderr. */
  follow(prefix: string): ChunkConsumer | undefined {
    const to = this.o.stderr;
    if (!to) return undefined;
    const p = new LinePrefixer(prefix, (t) => this.write(to, t));
    this.flushers.push(() => p.flush());
    return p;
  }

  /** A partial last line of every stream is shown, then the final table stays on screen. */
  close(): void {
    for (const f of this.flushers.splice(0)) f();
    this.view?.close();
  }
}
