import { BerthError, EXIT } from '../errors.js';
import { formatRange } from '../host/intervals.js';
import type { HostSysctls } from '../host/host-map.js';
import { DEFAULT_BAND, defaultLayout, usableFloor } from './default-layout.js';
import { portRangeCommand, suggestedEphemeral } from './ephemeral-fix.js';
import type { Layout } from './layout-model.js';

/**
 * The built-in layout of this host. Throws BerthError(69) when `band` is "default" and the host
 * has none (ip_local_port_range="1024 65535": connect() may take any port), with the fix
 * `berth doctor` gives; `who` starts the message ('service "web": '), `alternative` says what
 * to give instead of the band.
 */
export function builtInLayout(host: HostSysctls, band: string, alternative: string, who = ''): Layout {
  const layout = defaultLayout(host);
  if (band !== DEFAULT_BAND || layout.bands.length > 0) return layout;
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
