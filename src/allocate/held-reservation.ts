import type { ChildProcess } from 'node:child_process';
import type dgram from 'node:dgram';
import type net from 'node:net';
import { BerthError, EXIT } from '../errors.js';
import { findSocketOwners } from '../host/owners.js';
import { readHostMap } from '../host/read-host.js';
import type { SocketRow } from '../host/host-map.js';
import { describeInUse } from './explain.js';
import { closeServer, closeUdp, holdPort, holdUdp, serverFd, type HoldError } from './hold-socket.js';
import { closeName, type NameHold } from './lease-domain.js';
import { endHolder } from './lease-holder.js';
import { busyPorts, inUseEntry } from './plan.js';
import type { AllocationReport, Lease, Reservation } from './allocation-types.js';

/** One port of a reservation: its lease (the port's name in the lease domain) and its hold. */
export interface Taken {
  lease: Lease;
  /** The port's lease name; undefined once closed here (a holder process may still have it). */
  name: NameHold | undefined;
  server: net.Server | undefined;
  /** The hold of the port's UDP side (`udp: true`), held and let go with `server`. */
  udp?: dgram.Socket | undefined;
}

/** Close a port's holds (TCP, and UDP when held), keeping its lease. */
export async function unholdTaken(t: Taken): Promise<void> {
  const s = t.server;
  const u = t.udp;
  t.server = undefined;
  t.udp = undefined;
  await Promise.all([s ? closeServer(s) : undefined, u ? closeUdp(u) : undefined]);
}

/** Close the holds (unless `keepHolds`) and the lease names of `taken`: a rollback, a release, or a holder process taking the names. */
export async function giveBack(taken: readonly Taken[], keepHolds = false): Promise<void> {
  await Promise.all(
    taken.map(async (t) => {
      const n = t.name;
      t.name = undefined;
      if (!keepHolds) await unholdTaken(t);
      if (n) await closeName(n);
    }),
  );
}

/** How the ports were first held, so that rehold() binds them the same way. */
export interface HoldShape {
  block?: boolean;
  /** IPv6 on: the hold is dual-stack [::] (hold-socket.ts). */
  ipv6?: boolean;
  /** fd handoff: the service's address, with a server's backlog. */
  holdAddress?: string;
  procRoot?: string;
  /** The port's UDP side is held too (hold-socket.ts holdUdp). */
  udp?: boolean;
}

/** Where a reservation's lease lives besides its ports' names: its record, and a holder process. */
export interface LeaseKeeping {
  /** The names of the lease record (lease-record.ts); closed after the ports' names. */
  records: NameHold[];
  /** The holder process of an --owner/--ttl lease (lease-holder.ts), shared by a set's reservations. */
  holder?: ChildProcess;
}

export class HeldReservation implements Reservation {
  readonly ports: number[];
  readonly leases: Lease[];
  readonly report: AllocationReport;
  readonly block: boolean;
  private readonly taken: Taken[];
  private readonly shape: HoldShape;
  private readonly keeping: LeaseKeeping;
  private releasing: Promise<void> | undefined;

  constructor(taken: Taken[], report: AllocationReport, shape: HoldShape = {}, keeping: LeaseKeeping = { records: [] }) {
    this.taken = taken;
    this.ports = taken.map((t) => t.lease.port);
    this.leases = taken.map((t) => t.lease);
    this.report = report;
    this.block = shape.block === true;
    this.shape = shape;
    this.keeping = keeping;
  }

  /** The open lease-name sockets (ports', then the record's): what a watchdog must hold too. */
  leaseHandles(): NameHold[] {
    const out: NameHold[] = [];
    for (const t of this.taken) if (t.name?.listening) out.push(t.name);
    for (const r of this.keeping.records) if (r.listening) out.push(r);
    return out;
  }

  /** The lease now lives in the holder process only: close our copies of its names. */
  async dropNames(): Promise<void> {
    await giveBack(this.taken, true);
    await Promise.all(this.keeping.records.map(closeName));
  }

  async rehold(): Promise<void> {
    if (this.block || this.releasing !== undefined) return;
    const made: Taken[] = [];
    let side = 'TCP';
    for (const t of this.taken) {
      if (t.server !== undefined) continue;
      try {
        // Like the first hold (and like a service's listen): SO_REUSEADDR, so the TIME_WAIT
        // a restarted service's last connections leave on its port does not stand in the way.
        side = 'TCP';
        t.server = await holdPort(t.lease.port, this.shape.ipv6 !== false, this.shape.holdAddress);
        made.push(t);
        if (this.shape.udp === true && t.udp === undefined) {
          side = 'UDP';
          t.udp = await holdUdp(t.lease.port, this.shape.ipv6 !== false, this.shape.holdAddress);
        }
      } catch (e) {
        await Promise.all(made.map((m) => this.unhold(m.lease.port)));
        const port = t.lease.port;
        const who = portTaker(port, this.shape.procRoot, side === 'UDP');
        const code = (e as HoldError).code ?? 'UNKNOWN';
        const at = this.shape.holdAddress === undefined ? '' : ` on ${this.shape.holdAddress}`;
        const what = side === 'UDP' ? `the UDP side of port ${port}` : `port ${port}`;
        throw new BerthError(
          EXIT.UNAVAILABLE,
          `cannot hold ${what}${at} again (${code}): ` +
            `${who === undefined ? 'no socket is listed on it now (taken and let go just now)' : `it is in use: ${who}`}; the lease is still yours, ` +
              `the port is not`,
          { port, code },
        );
      }
    }
  }

  holdFd(port: number): number | undefined {
    const s = this.taken.find((t) => t.lease.port === port)?.server;
    return s === undefined ? undefined : serverFd(s);
  }

  async unholdUdp(): Promise<void> {
    await Promise.all(
      this.taken.map(async (t) => {
        const u = t.udp;
        t.udp = undefined;
        if (u) await closeUdp(u);
      }),
    );
  }

  async unhold(port?: number): Promise<void> {
    await Promise.all(
      this.taken
        .filter((t) => port === undefined || t.lease.port === port)
        .map(unholdTaken),
    );
  }

  release(): Promise<void> {
    // Idempotent, also when called again before the first call finished.
    this.releasing ??= (async () => {
      await this.unhold();
      // Ports first: a reader then never sees a port whose record is gone (it would look like a set in progress).
      await giveBack(this.taken);
      await Promise.all(this.keeping.records.map(closeName));
      if (this.keeping.holder) await endHolder(this.keeping.holder);
    })();
    return this.releasing;
  }
}

/** Who has a port ("20101 LISTEN by pid 4242 (…)"; `udp`: its UDP sockets), read only after a hold failed: walking /proc/<pid>/fd is costly. */
function portTaker(port: number, procRoot = '/proc', udp = false): string | undefined {
  let row: SocketRow | undefined;
  try {
    const rows = readHostMap({ procRoot, localPorts: [{ lo: port, hi: port }] }).sockets.filter((r) => !udp || r.protocol === 'udp');
    row = busyPorts(rows, [{ lo: port, hi: port }]).get(port);
  } catch {
    return undefined;
  }
  if (row === undefined) return undefined;
  const owner = row.inode !== 0 ? findSocketOwners(procRoot, new Set([row.inode])).get(row.inode)?.[0] : undefined;
  return describeInUse(inUseEntry(port, row, owner), process.geteuid?.() === 0);
}

/** The lease-name sockets of a reservation made here (empty for any other Reservation). */
export function leaseHandles(r: Reservation): NameHold[] {
  return r instanceof HeldReservation ? r.leaseHandles() : [];
}
