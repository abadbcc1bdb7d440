import type net from 'node:net';
import { BerthError, EXIT } from '../errors.js';
import { closeServer, holdPort, serverFd, type HoldError } from './hold.js';
import { removeOwnLease, removeSetMarker, type LeaseIdentity } from './lease-store.js';
import { portTaker } from './port-taker.js';
import type { AllocationReport, Lease, Reservation } from './types.js';

/** One port of a reservation: its lease (and the file to operate on) and its hold. */
export interface Taken {
  lease: Lease;
  /** The lease file's path to operate on (Lease.path is the one users know). */
  file: string;
  id: LeaseIdentity;
  /** The hold; undefined once closed. */
  server: net.Server | undefined;
}

/** Close the holds and remove the leases of `taken`, in order (a rollback or a release). */
export async function giveBack(taken: readonly Taken[]): Promise<void> {
  for (const t of taken) {
    const s = t.server;
    t.server = undefined;
    if (s) await closeServer(s);
    await removeOwnLease(t.file, t.id);
  }
}

/** The kept marker of a set with blocks (lease-store.ts, "Sets"): removed with its last block. */
export class SetMarker {
  constructor(
    private readonly dir: string,
    private readonly set: string,
    private blocks: number,
  ) {}

  /** One block of the set is released. */
  blockReleased(): void {
    if (--this.blocks === 0) removeSetMarker(this.dir, this.set);
  }
}

/** How the ports were first held, so that rehold() binds them the same way. */
export interface HoldShape {
  block?: boolean;
  /** IPv6 on: the hold is dual-stack [::] (hold.ts). */
  ipv6?: boolean;
  /** fd handoff: the service's address, with a server's backlog. */
  holdAddress?: string;
  procRoot?: string;
  /** A block's set marker, to let go of once the block's leases are gone. */
  marker?: SetMarker;
}

export class HeldReservation implements Reservation {
  readonly ports: number[];
  readonly leases: Lease[];
  readonly report: AllocationReport;
  readonly block: boolean;
  private readonly taken: Taken[];
  private readonly shape: HoldShape;
  private releasing: Promise<void> | undefined;

  constructor(taken: Taken[], report: AllocationReport, shape: HoldShape = {}) {
    this.taken = taken;
    this.ports = taken.map((t) => t.lease.port);
    this.leases = taken.map((t) => t.lease);
    this.report = report;
    this.block = shape.block === true;
    this.shape = shape;
  }

  async rehold(): Promise<void> {
    if (this.block || this.releasing !== undefined) return;
    const made: Taken[] = [];
    for (const t of this.taken) {
      if (t.server !== undefined) continue;
      try {
        // Like the first hold (and like a service's listen): SO_REUSEADDR, so the TIME_WAIT
        // a restarted service's last connections leave on its port does not stand in the way.
        t.server = await holdPort(t.lease.port, this.shape.ipv6 !== false, this.shape.holdAddress);
        made.push(t);
      } catch (e) {
        await Promise.all(made.map((m) => this.unhold(m.lease.port)));
        const port = t.lease.port;
        const who = portTaker(port, this.shape.procRoot);
        const code = (e as HoldError).code ?? 'UNKNOWN';
        const at = this.shape.holdAddress === undefined ? '' : ` on ${this.shape.holdAddress}`;
        throw new BerthError(
          EXIT.UNAVAILABLE,
          `cannot hold port ${port}${at} again (${code}): ${who === undefined ? 'no socket is listed on it now (taken and let go just now)' : `it is in use: ${who}`}; the lease is still yours, the port is not`,
          { port, code },
        );
      }
    }
  }

  holdFd(port: number): number | undefined {
    const s = this.taken.find((t) => t.lease.port === port)?.server;
    return s === undefined ? undefined : serverFd(s);
  }

  async unhold(port?: number): Promise<void> {
    await Promise.all(
      this.taken
        .filter((t) => port === undefined || t.lease.port === port)
        .map(async (t) => {
          const s = t.server;
          t.server = undefined;
          if (s) await closeServer(s);
        }),
    );
  }

  release(): Promise<void> {
    // Idempotent, also when called again before the first call finished.
    this.releasing ??= (async () => {
      await this.unhold();
      await giveBack(this.taken);
      this.shape.marker?.blockReleased();
    })();
    return this.releasing;
  }
}
