import { BerthError, EXIT } from '../errors.js';
import { formatRange } from '../host/intervals.js';
import type { HostSysctls } from '../host/types.js';
import { DEFAULT_BAND, defaultLayout, usableFloor } from './default-layout.js';
import { portRangeCommand, suggestedEphemeral } from './ephemeral-fix.js';
import type { Band } from './types.js';

/*
 * The built-in band, or why there is none. A host whose ephemeral range covers every
 * unprivileged port (ip_local_port_range="1024 65535") has no port an outgoing connect()
 * cannot take: that is no usable port (69), said with the ranges and the fix, the same
 * fix `berth doctor` gives.
 */

/**
 * The "default" band of this host. Throws BerthError(69) when there is none; `who` starts
 * the message ('service "web": '), `alternative` says what to give instead of the band.
 */
export function requireDefaultBand(host: HostSysctls, alternative: string, who = ''): Band {
  const band = defaultLayout(host).bands.find((b) => b.name === DEFAULT_BAND);
  if (band) return band;
  const e = host.ephemeral;
  const reserved = host.reserved.length === 0 ? 'none' : host.reserved.map(formatRange).join(',');
  // The fix `berth doctor` gives for this host (check.ts, "no-bands"): the default layout has no band to warn about.
  const sysctl = `, or (as root) shrink the ephemeral range: ${portRangeCommand(suggestedEphemeral(host))}`;
  throw new BerthError(
    EXIT.UNAVAILABLE,
    `${who}this host has no built-in "default" band: every port from ${usableFloor(host)} to 65535 lies in the ephemeral range ` +
      `${formatRange(e)} (net.ipv4.ip_local_port_range; reserved: ${reserved}), so any outgoing connection may take it. ` +
      `Give ${alternative}${sysctl}, or reserve a block of ports with net.ipv4.ip_local_reserved_ports; 'berth doctor' shows the details`,
    { ephemeral: e, reserved: host.reserved, unprivilegedStart: host.unprivilegedStart },
  );
}
