import { formatRange } from '../../host/intervals.js';
import type { PortRange } from '../../host/host-map.js';
import type { Band } from '../../layout/layout-model.js';
import { instanceCount } from '../../layout/windows.js';
import type { Draft } from './draft.js';

/*
 * The ports services claim as written (fixed ports, ranges, band windows), against each
 * other: two services whose claims overlap would take each other's ports at the first start.
 * A band without windows is shared by design and meets only fixed claims.
 */

function describeBand(b: Band): string {
  return `band "${b.name}" (${formatRange(b)}${b.window === undefined ? '' : `, window ${b.window}`})`;
}

interface Claim {
  service: string;
  line: number;
  range: PortRange;
  what: string;
  /** A band without windows is shared by design; it conflicts only with fixed ports/ranges. */
  fixed: boolean;
}

/** Each overlap of two services' claimed ports, reported once per pair; replicas beyond a band's windows too. */
export function checkPortOverlaps(drafts: readonly Draft[], add: (line: number, text: string) => void): void {
  const claims: Claim[] = [];
  for (const draft of drafts) {
    if (draft.broken) continue;
    const label = `service "${draft.spec.name}"`;
    const ports = draft.spec.source;
    const line = draft.source?.line ?? draft.spec.line;
    const n = draft.spec.replicas;
    if (ports.kind === 'port') {
      if (n === 'gpus' || n > 1) {
        const replicas = n === 'gpus' ? '"gpus"' : n;
        const fix = 'use range: LO-HI or a band with a window';
        add(draft.replicasLine, `${label}: replicas ${replicas} with the fixed port ${ports.port}: every replica would need port ${ports.port}; ${fix}`);
        continue;
      }
      claims.push({ service: draft.spec.name, line, range: { lo: ports.port, hi: ports.port }, what: `port ${ports.port}`, fixed: true });
    } else if (ports.kind === 'range') {
      claims.push({ service: draft.spec.name, line, range: ports.range, what: `range ${formatRange(ports.range)}`, fixed: true });
    } else if (ports.kind === 'band') {
      const band = ports.band;
      if (band.window === undefined) {
        claims.push({ service: draft.spec.name, line, range: { lo: band.lo, hi: band.hi }, what: describeBand(band), fixed: false });
        continue;
      }
      if (n === 'gpus') continue; // the window count is known only under Slurm
      const count = instanceCount(band);
      const lastNeeded = ports.instance + n - 1;
      if (lastNeeded >= count) {
        const who =
          n === 1
            ? `instance ${ports.instance} needs window ${ports.instance}`
            : `replicas ${n} from instance ${ports.instance} need windows ${ports.instance}-${lastNeeded}`;
        const at = draft.replicasLine === draft.spec.line ? line : draft.replicasLine;
        const fix = 'widen the band, use a smaller window, or lower replicas';
        add(at, `${label}: ${who} of ${describeBand(band)}, which has ${count} (0-${count - 1}); ${fix}`);
        continue;
      }
      for (let r = 0; r < n; r++) {
        const w = ports.instance + r;
        const lo = band.lo + w * band.window;
        const win = `window ${w} of band "${band.name}" (${formatRange({ lo, hi: lo + band.window - 1 })})`;
        const what = n === 1 ? win : `replica ${r}'s ${win}`;
        claims.push({ service: draft.spec.name, line, range: { lo, hi: lo + band.window - 1 }, what, fixed: true });
      }
    }
  }
  const reported = new Set<string>();
  for (let j = 1; j < claims.length; j++) {
    const b = claims[j]!;
    for (let i = 0; i < j; i++) {
      const a = claims[i]!;
      if (a.service === b.service || (!a.fixed && !b.fixed)) continue;
      const lo = Math.max(a.range.lo, b.range.lo);
      const hi = Math.min(a.range.hi, b.range.hi);
      if (lo > hi) continue;
      const pair = `${a.service}\0${b.service}`;
      if (reported.has(pair)) continue;
      reported.add(pair);
      // "on ports" only adds something when neither side lies wholly inside the other.
      const same = (a.range.lo === lo && a.range.hi === hi) || (b.range.lo === lo && b.range.hi === hi);
      const onPorts = same ? '' : ` on ports ${formatRange({ lo, hi })}`;
      const overlap = `${b.what} overlaps ${a.what} of service "${a.service}" (line ${a.line})${onPorts}`;
      add(b.line, `service "${b.service}": ${overlap}; give each service its own ports`);
    }
  }
}
