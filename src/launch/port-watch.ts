import { readSocketsAsync } from '../host/socket-reader.js';
import type { PortRange, SocketRow } from '../host/host-map.js';
import { deferred, type Deferred } from '../util/deferred.js';

/*
 * A read of the socket tables costs about the same for 3 sockets or 300, so one poller per /proc root
 * serves every launch of this process waiting for its service to listen: each asks for its port's rows
 * by its next poll time, and at the earliest such time one read of the asked ports answers them all.
 * LISTEN sockets only: sock_diag then walks the listening hash alone, never every namespace's connection
 * hash (docs/scale.md §2). A request made during a read waits for the next: never staler than its own look.
 */

interface Request {
  port: number;
  due: number;
  answer: Deferred<SocketRow[]>;
}

export interface PortLook {
  readonly rows: Promise<SocketRow[]>;
  /** Answer as soon as possible (the service printed something, or the launch must move on). */
  hurry(): void;
}

const now = () => performance.now();
/** The next read waits at least this × the last one's cost (tens of ms on a big table; a longer gap made a loaded host slower to ready). */
const GAP_FACTOR = 1;

export class TablePoller {
  /** Reads of the tables so far (for tests and benchmarks). */
  reads = 0;
  private readonly pending = new Set<Request>();
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private timerAt = Infinity;
  /** When the last read ended and what it cost (ms): the next starts no sooner than GAP_FACTOR × cost after. */
  private lastEnd = -Infinity;
  private lastCost = 0;
  /** A read is under way: requests made now wait for the next one (begun after them). */
  private reading = false;

  constructor(private readonly procRoot: string) {}

  /** The LISTEN rows of `port` from a read made after this call, at the latest about `withinMs` from now. */
  look(port: number, withinMs: number): PortLook {
    const req: Request = { port, due: now() + Math.max(0, withinMs), answer: deferred() };
    this.pending.add(req);
    this.arm(req.due);
    return {
      rows: req.answer.promise,
      hurry: () => {
        if (!this.pending.has(req)) return;
        req.due = now();
        this.arm(req.due);
      },
    };
  }

  private arm(due: number): void {
    if (this.reading) return; // re-armed when the read ends
    due = Math.max(due, this.lastEnd + GAP_FACTOR * this.lastCost);
    const wait = due - now();
    if (wait <= 0) {
      // Now: after the current turn, so requests made in it share the read.
      this.immediate ??= setImmediate(() => this.tick());
      return;
    }
    if (due >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = due;
    this.timer = setTimeout(() => this.tick(), wait);
  }

  private tick(): void {
    clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
    this.timerAt = Infinity;
    if (this.pending.size === 0 || this.reading) return;
    const served = [...this.pending];
    this.pending.clear();
    this.reads++;
    this.reading = true;
    // Only the waited-for ports' listeners are built (the rest of a busy table is passed over).
    const ports: PortRange[] = [...new Set(served.map((r) => r.port))].map((p) => ({ lo: p, hi: p }));
    const t0 = now();
    readSocketsAsync({ procRoot: this.procRoot, localPorts: ports, listenOnly: true }).then(
      (read) => {
        this.ended(t0);
        for (const req of served) req.answer.resolve(read.rows.filter((r) => r.localPort === req.port));
      },
      (e: unknown) => {
        this.ended(t0);
        for (const req of served) req.answer.reject(e as Error);
      },
    );
  }

  private ended(t0: number): void {
    this.reading = false;
    this.lastEnd = now();
    this.lastCost = this.lastEnd - t0;
    let due = Infinity;
    for (const req of this.pending) due = Math.min(due, req.due);
    if (due !== Infinity) this.arm(due);
  }
}

const pollers = new Map<string, TablePoller>();

/** The process-wide poller of `procRoot`. */
export function tablePoller(procRoot: string): TablePoller {
  let p = pollers.get(procRoot);
  if (!p) pollers.set(procRoot, (p = new TablePoller(procRoot)));
  return p;
}
