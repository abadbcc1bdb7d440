import type net from 'node:net';
import { closeServer, serverFd } from './hold.js';
import { removeOwnLease, type LeaseIdentity } from './lease-store.js';
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

export class HeldReservation implements Reservation {
  readonly ports: number[];
  readonly leases: Lease[];
  readonly report: AllocationReport;
  private readonly taken: Taken[];
  private releasing: Promise<void> | undefined;

  constructor(taken: Taken[], report: AllocationReport) {
    this.taken = taken;
    this.ports = taken.map((t) => t.lease.port);
    this.leases = taken.map((t) => t.lease);
    this.report = report;
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
    })();
    return this.releasing;
  }
}
