import type { ChildProcess } from 'node:child_process';
import type net from 'node:net';
import { parseIpc, type IpcMessage } from './protocol.js';

/* berth's side of the launches' lease sockets: why they are sent, and the release handshake, in protocol.ts. */

/** How long berth waits for the watchdog to say it closed a launch's lease sockets (about 1 ms alive; its start-up, when the launch was that short). */
const ACK_MS = 1_000;
/** After killing an unresponsive watchdog, how long to wait for the kernel to close its descriptors. */
const KILL_WAIT_MS = 1_000;

export class LeaseHandoff {
  /** Lease sockets of live launches, by id: sent again to a new watchdog. */
  private readonly leases = new Map<string, net.Server[]>();
  /** Lease sockets written to the current watchdog, by launch id: what it must have closed before it answers. */
  private readonly sent = new Map<string, number>();
  /** Launches waiting for the watchdog's 'released'. */
  private readonly acks = new Map<string, () => void>();

  /** `child()` is the watchdog now running; `flush()` writes what waits on the pipe (the IPC channel is another path: what was said goes first). */
  constructor(
    private readonly child: () => ChildProcess | undefined,
    private readonly flush: () => void,
  ) {}

  /** A new watchdog: it holds nothing yet; every live launch's sockets go to it. */
  started(child: ChildProcess): void {
    this.sent.clear();
    child.on('message', (m: unknown) => {
      const msg = parseIpc(m);
      if (msg?.op === 'released') this.acks.get(msg.id)?.();
    });
    for (const [id, handles] of this.leases) void this.send(id, handles);
  }

  /** Hand the launch's lease sockets to the watchdog; resolves once they are on their way (in the kernel's hands). */
  hold(id: string, handles: readonly net.Server[]): Promise<void> {
    if (handles.length === 0) return Promise.resolve();
    this.leases.set(id, [...handles]);
    return this.send(id, handles);
  }

  /** The launch has ended: a new watchdog is not sent its sockets. */
  forget(id: string): void {
    this.leases.delete(id);
  }

  private send(id: string, handles: readonly net.Server[]): Promise<void> {
    this.flush();
    const child = this.child();
    if (!child?.connected) return Promise.resolve();
    const count = (d: number) => this.child() === child && this.sent.set(id, (this.sent.get(id) ?? 0) + d);
    return Promise.all(
      handles.map(
        (h) =>
          new Promise<void>((resolve) => {
            try {
              // The callback comes once the descriptor is written to the channel: from then on it is the watchdog's too.
              const m: IpcMessage = { op: 'lease', id };
              child.send(m, h, (err) => {
                if (err) count(-1); // a watchdog gone meanwhile: berth still holds the lease itself
                resolve();
              });
              count(1);
            } catch {
              resolve();
            }
          }),
      ),
    ).then(() => undefined);
  }

  /** After the launch's 'end': resolves once the watchdog said it closed them, exited, or was killed for not answering within ACK_MS. */
  async release(id: string): Promise<void> {
    this.flush();
    const child = this.child();
    const leases = this.sent.get(id) ?? 0;
    this.sent.delete(id);
    if (!child || leases === 0) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const answered = await new Promise<boolean>((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.acks.delete(id);
        resolve(ok);
      };
      const timer = setTimeout(() => done(false), ACK_MS);
      this.acks.set(id, () => done(true));
      void exited.then(() => done(true));
      try {
        const m: IpcMessage = { op: 'release', id, leases };
        child.send(m, undefined, {}, (err) => err && done(false));
      } catch {
        done(false);
      }
    });
    if (answered) return;
    // Unresponsive (or its channel is gone): its descriptors close with it. While other
    // launches live, the 'exit' handler starts another one and sends it theirs.
    child.kill('SIGKILL');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise<void>((r) => (timer = setTimeout(r, KILL_WAIT_MS)))]);
    clearTimeout(timer);
  }
}
