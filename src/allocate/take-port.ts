import type net from 'node:net';
import type { Taken } from './held-reservation.js';
import { addressFailure, closeServer, holdPort, holdUdp, type HoldError } from './hold-socket.js';
import { bindName, closeName, descriptorError } from './lease-domain.js';
import { portName } from './lease-protocol.js';
import type { AllocationReport, Lease } from './allocation-types.js';

/** Lease (its name) and hold one port; undefined, with the reason in `report`, when it cannot be had. */
export async function takePort(
  port: number,
  report: AllocationReport,
  lease: Lease,
  ipv6: boolean,
  holdAddress: string | undefined,
  udp = false,
): Promise<Taken | undefined> {
  const name = await bindName(portName(port));
  if (name === undefined) {
    report.excluded.raced.push({ port, reason: 'leased concurrently' });
    return undefined;
  }
  let server: net.Server | undefined;
  try {
    server = await holdPort(port, ipv6, holdAddress);
    return { lease, name, server, ...(udp ? { udp: await holdUdp(port, ipv6, holdAddress) } : {}) };
  } catch (e) {
    // With `server`, it is the UDP side that failed.
    if (server) await closeServer(server);
    await closeName(name);
    const code = (e as HoldError).code ?? 'UNKNOWN';
    if (code === 'EMFILE' || code === 'ENFILE') throw descriptorError(code, `holding ${server ? 'the UDP side of ' : ''}port ${port}`);
    const bad = holdAddress === undefined ? undefined : addressFailure(e, holdAddress);
    if (bad) throw bad;
    report.excluded.bindFailed.push({ port, code, ...(server ? { protocol: 'udp' as const } : {}) });
    return undefined;
  }
}
