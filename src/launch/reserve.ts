import { reserve as reservePorts } from '../allocate/reserve.js';
import { pickSourceOptions } from '../allocate/source-options.js';
import type { ReserveOptions } from '../allocate/types.js';
import { BerthError, EXIT } from '../errors.js';
import { iso, type LaunchState } from './state.js';

/** Phase 1: the caller's reservation, or lease and hold a port of the launch's source. */
export async function reserve(s: LaunchState): Promise<void> {
  s.phase = 'reserve';
  if (s.o.reservation) {
    s.reservation = s.o.reservation;
  } else {
    const ro: ReserveOptions = { ...pickSourceOptions(s.o), ownerPid: process.pid, name: s.name, procRoot: s.procRoot };
    if (s.o.allowEphemeral) ro.allowEphemeral = true;
    if (s.o.stateDir !== undefined) ro.stateDir = s.o.stateDir;
    // The hold becomes the service's socket: on the asked address, as {host} defaults.
    if (s.handoff === 'fd') ro.holdAddress = s.o.bind ?? '127.0.0.1';
    s.reservation = await reservePorts(ro);
  }
  const port = s.reservation.ports[0];
  if (port === undefined) throw new BerthError(EXIT.SOFTWARE, 'the reservation holds no port');
  s.port = port;
  s.mark('reservedMs');
  s.emit({ type: 'reserved', port, t: iso() });
}
