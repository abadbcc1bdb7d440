import { readNetns } from '../host/read-host.js';
import { bindName, closeName } from './lease-domain.js';
import { capName, portName } from './lease-protocol.js';
import { currentLeases, type ListedLease } from './lease-list.js';
import { HeldReservation } from './held-reservation.js';
import { emptyReport } from './plan.js';
import { bindRecord } from './reserve-commit.js';
import { recordOf } from './set-record.js';
import type { Lease, Reservation } from './allocation-types.js';

/*
 * The lease of a port a service chose and already listens on (learned): its own socket keeps the
 * port, so nothing is held; the lease makes other allocators refuse it, naming the lease. A port
 * name already bound means someone leased the port before the service bound it.
 */

export type ListenedLease = { reservation: Reservation } | { leasedBy: ListedLease | undefined };

export async function leaseListened(port: number, name: string | undefined, procRoot = '/proc'): Promise<ListenedLease> {
  const hold = await bindName(portName(port));
  if (hold === undefined) return { leasedBy: currentLeases({ procRoot }).find((l) => l.port === port) };
  const createdAt = Date.now();
  try {
    const records = await bindRecord({ ...recordOf([port], false, process.getuid?.() ?? 0, {}, undefined, name), createdAt });
    const lease: Lease = {
      port,
      kind: 'single',
      createdAt,
      createdBy: process.pid,
      netns: readNetns(procRoot),
      ...(name !== undefined ? { name: capName(name) } : {}),
    };
    const report = { ...emptyReport({ kind: 'port', port }), considered: 1 };
    // block: true in its shape only so that rehold() never tries to bind what the service holds.
    return { reservation: new HeldReservation([{ lease, name: hold, server: undefined }], report, { block: true }, { records }) };
  } catch (e) {
    await closeName(hold);
    throw e;
  }
}
