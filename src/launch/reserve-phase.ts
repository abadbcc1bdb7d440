import { pickSourceOptions, type ReserveOptions } from '../source/options.js';
import { reserve as reservePorts, reserveNamedSet } from '../source/reserve.js';
import { capName, USER_NAME_CHARS } from '../allocate/lease-protocol.js';
import { BerthError, EXIT } from '../errors.js';
import { stopSignal } from './lifecycle.js';
import { iso, type LaunchState } from './state.js';

/**
 * Phase 1: the caller's reservation or port set, or lease and hold the port (the named set,
 * all or none) from the launch's source. The primary port is the set's first entry.
 */
export async function reserve(s: LaunchState): Promise<void> {
  const o = s.o;
  if (o.portSet) {
    s.set = o.portSet;
  } else if (o.reservation) {
    s.reservation = o.reservation;
  } else {
    // A default name (the program's) is cut to fit a lease record; one given was checked in prepare.
    const ro: ReserveOptions = { ...pickSourceOptions(o), ownerPid: process.pid, name: capName(s.name, USER_NAME_CHARS), procRoot: s.procRoot };
    if (o.allowEphemeral) ro.allowEphemeral = true;
    // The holds become the service's sockets: on the asked address, as {host} defaults.
    if (s.handoff === 'fd') ro.holdAddress = o.bind ?? '127.0.0.1';
    // A stop during the reservation ends it at the next port, with everything given back.
    ro.signal = s.reserveAbort.signal;
    // --udp: the primary port's UDP side too (a set's other entries say so themselves).
    if (o.udp === true && !o.ports) ro.udp = true;
    const entries = o.udp === true && o.ports ? o.ports.map((e, i) => (i === 0 && e.kind === 'single' ? { ...e, udp: true as const } : e)) : o.ports;
    try {
      if (entries) s.set = await reserveNamedSet(entries, ro);
      else s.reservation = await reservePorts(ro);
    } catch (e) {
      if (stopSignal(s.life) !== undefined) return;
      throw e;
    }
  }
  if (s.set) s.reservation = s.set.reservations[0];
  // A learned primary: the set's leased ports are reserved, the primary comes later (port 0 until then).
  if (!s.learnPrimary) {
    s.port = s.reservation?.ports[0];
    if (s.port === undefined) throw new BerthError(EXIT.SOFTWARE, 'the reservation holds no port');
  }
  s.mark('reservedMs');
  s.emit({ type: 'reserved', port: s.port ?? 0, ...(s.set ? { ports: s.set.assigned } : {}), t: iso() });
}
