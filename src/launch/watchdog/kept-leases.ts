import type net from 'node:net';
import { parseIpc, type IpcMessage } from './protocol.js';

/*
 * The watchdog's copies of each launch's lease sockets (protocol.ts), closed when berth says the
 * launch ended (on the pipe or on the IPC channel, in whichever order the two deliver) or once it is stopped.
 */
export class KeptLeases {
  private readonly held = new Map<string, net.Server[]>();
  private readonly ended = new Set<string>();
  /** Per launch: lease sockets received so far, and how many berth said it sent once it asked for them to be closed. */
  private readonly received = new Map<string, number>();
  private readonly asked = new Map<string, number>();

  constructor(private readonly reply: (m: IpcMessage) => void) {}

  /** A message on the IPC channel, with the socket it carries. */
  receive(m: unknown, h: unknown): void {
    const msg = parseIpc(m);
    if (msg?.op === 'release') {
      this.end(msg.id);
      this.asked.set(msg.id, msg.leases);
      this.answer(msg.id);
      return;
    }
    if (msg?.op !== 'lease') return;
    // Counted with or without its socket: one that berth closed while it waited in Node's send
    // queue arrives without it (it is gone already).
    this.received.set(msg.id, (this.received.get(msg.id) ?? 0) + 1);
    if (h === undefined || h === null) {
      this.answer(msg.id);
      return;
    }
    const server = h as net.Server;
    server.on('error', () => {});
    server.on('connection', (sock: net.Socket) => sock.destroy());
    if (this.ended.has(msg.id)) {
      server.close();
      this.answer(msg.id);
      return;
    }
    const list = this.held.get(msg.id);
    if (list) list.push(server);
    else this.held.set(msg.id, [server]);
  }

  /** The launch has ended: its sockets close now, and any still on their way as they come. */
  end(id: string): void {
    this.ended.add(id);
    this.close(id);
  }

  close(id: string): void {
    for (const h of this.held.get(id) ?? []) h.close();
    this.held.delete(id);
  }

  closeAll(): void {
    for (const id of [...this.held.keys()]) this.close(id);
  }

  private answer(id: string): void {
    const want = this.asked.get(id);
    if (want === undefined || (this.received.get(id) ?? 0) < want) return;
    this.asked.delete(id);
    this.reply({ op: 'released', id });
  }
}
