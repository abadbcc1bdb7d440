import { formatRange } from '../host/intervals.js';
import { DEFAULT_SOURCE } from './default-layout.js';
import type { Finding, Layout } from './layout-model.js';
import { describeWellKnown, wellKnownIn } from './well-known-ports.js';

/*
 * Only a note: the band may be meant for exactly those services, and berth hands out a
 * user's band as written. The built-in default band skips these ports, so it gets no note.
 */

export function wellKnownFindings(layout: Layout): Finding[] {
  if (layout.source === DEFAULT_SOURCE) return [];
  const out: Finding[] = [];
  for (const b of layout.bands) {
    const hits = wellKnownIn(b);
    if (hits.length === 0) continue;
    const at = b.line !== undefined ? `${layout.source}:${b.line}: ` : '';
    const these = hits.length === 1 ? 'this port, which a common service takes' : `these ${hits.length} ports, which common services take`;
    out.push({
      severity: 'info',
      code: 'band-service-ports',
      band: b.name,
      message: `${at}band "${b.name}" ${formatRange(b)} contains ${these} by default: ${describeWellKnown(hits)}. berth hands ` +
        `${hits.length === 1 ? 'it' : 'them'} out like any port of the band (only the built-in default band skips such ports): if such a service runs on ` +
          `this host, whichever of the two binds second fails with EADDRINUSE`,
      ranges: hits.map((h) => ({ lo: h.port, hi: h.port })),
    });
  }
  return out;
}
