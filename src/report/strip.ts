// One horizontal strip of the port space as SVG: bands (with instance windows), the host's
// ranges (privileged, ephemeral, reserved), sockets and leases, and an axis. The full
// 0-65535 strip and every zoomed strip are drawn by the same code at different scales.
import { formatRange, normalizeRanges, subtractRanges } from '../host/intervals.js';
import type { PortRange } from '../host/host-map.js';
import type { Band } from '../layout/layout-model.js';
import { bandText } from './format.js';
import {
  assignLanes, bandWindows, ephemeralOverlap, labelSpan, laneCount, makeScale, niceTicks, portX,
  pxPerPort, rangeRect, textWidth, type Rect, type Scale,
} from './geometry.js';
import { esc, h, num, title, v } from './markup.js';
import { leaseMarkers, markerRow, RIGHT, socketMarkers } from './strip-markers.js';
import { placeRangeLabels, STRIP_WIDTH, type Labelled } from './strip-labels.js';
import type { PortSpaceReport } from './port-space-report.js';

const GUTTER = 104; // room for the track names on the left
const TRACK_H = 26;
const LABEL_LANE_H = 17;

export interface StripSpec {
  id: string;
  domain: PortRange;
  report: PortSpaceReport;
  /** Zoomed: instance windows numbered, sockets and leases labelled. */
  detail: boolean;
  /** Accessible name of the figure. */
  label: string;
  /** Give the host-range rectangles their page-unique ids (#ephemeral, #privileged). */
  ids?: boolean;
}

interface Boundary {
  x: number;
  label: string;
  tip: string;
}

function boundaries(s: Scale, report: PortSpaceReport, detail: boolean): Boundary[] {
  const hst = report.host;
  const out: Boundary[] = [];
  const at = (port: number, edge: 'lo' | 'hi', tip: string) => {
    if (port < s.lo || port > s.hi) return;
    // A "lo" boundary is the left edge of its port, a "hi" boundary the right edge.
    out.push({ x: edge === 'lo' ? portX(s, port) : portX(s, port + 1), label: String(port), tip });
  };
  if (hst.unprivilegedStart > 0) at(hst.unprivilegedStart, 'lo', `ip_unprivileged_port_start = ${hst.unprivilegedStart}`);
  at(hst.ephemeral.lo, 'lo', `ephemeral range starts at ${hst.ephemeral.lo}`);
  at(hst.ephemeral.hi, 'hi', `ephemeral range ends at ${hst.ephemeral.hi}`);
  if (detail) {
    const range = (r: PortRange, what: string) => {
      at(r.lo, 'lo', `${what} ${formatRange(r)} starts`);
      if (r.hi !== r.lo) at(r.hi, 'hi', `${what} ${formatRange(r)} ends`);
    };
    for (const r of hst.reserved) range(r, 'reserved');
    for (const b of report.layout?.bands ?? []) {
      at(b.lo, 'lo', `band ${b.name} starts at ${b.lo}`);
      at(b.hi, 'hi', `band ${b.name} ends at ${b.hi}`);
    }
    for (const r of report.ranges) range(r, 'asked range');
  }
  // One label per x position (a band ending where the next starts shows both numbers once).
  const byX = new Map<string, Boundary>();
  for (const b of out.sort((a, c) => a.x - c.x || Number(a.label) - Number(c.label))) {
    const key = num(b.x);
    const prev = byX.get(key);
    if (!prev) {
      byX.set(key, { ...b });
      continue;
    }
    if (!prev.label.split('|').includes(b.label)) prev.label = `${prev.label}|${b.label}`;
    prev.tip = `${prev.tip}; ${b.tip}`;
  }
  return [...byX.values()];
}

/** Text placed inside a rectangle when it fits, else nothing (hover text still has it). */
function insideLabel(r: Rect, y: number, label: string, cls: string): string {
  if (textWidth(label, 11) + 8 > r.width) return '';
  return h('text', { x: r.x + r.width / 2, y, class: cls, 'text-anchor': 'middle' }, esc(label));
}

/** A range's rectangle across a track, with its hover text. */
function trackRect(r: Rect, y: number, cls: string, tip: string, range?: PortRange, id?: string): string {
  return h('rect', { id, x: r.x, y, width: r.width, height: TRACK_H, class: cls, 'data-lo': range?.lo, 'data-hi': range?.hi }, title(tip));
}

export function renderStrip(spec: StripSpec): string {
  const { report, detail } = spec;
  const hst = report.host;
  const bands = report.layout?.bands ?? [];
  const reportTime = Date.parse(report.generatedAt);
  const s = makeScale(spec.domain, GUTTER, STRIP_WIDTH - GUTTER - RIGHT);
  const right = s.x0 + s.width;
  const minW = detail ? 2 : 3;

  // Band and asked-range labels above the band track, in lanes so none overlap.
  const labelled: Labelled[] = [];
  for (const b of bands) {
    const rect = rangeRect(s, b, minW);
    if (rect) labelled.push({ range: b, rect, label: `${b.name} ${formatRange(b)}`, band: b });
  }
  for (const r of report.ranges) {
    const rect = rangeRect(s, r, minW);
    if (rect) labelled.push({ range: r, rect, label: `asked ${formatRange(r)}` });
  }
  const { items: labelItems, lanes } = placeRangeLabels(labelled);
  const nLanes = laneCount(lanes);

  const top = 8;
  const bandsY = top + nLanes * LABEL_LANE_H + (nLanes > 0 ? 8 : 0);
  const hostY = bandsY + TRACK_H + 4;
  const sockY = hostY + TRACK_H + 4;
  const sockRow = markerRow(s, socketMarkers(s, report.sockets, bands, detail), sockY, detail);
  const leaseY = sockY + sockRow.height + 4;
  const leaseRow = markerRow(s, leaseMarkers(s, report.leases, bands, reportTime), leaseY, detail);
  const axisY = leaseY + leaseRow.height + 2;

  const ticks = niceTicks(spec.domain, detail ? 14 : 13);
  const bounds = boundaries(s, report, detail);
  const boundSpans = bounds.map((b) => labelSpan(b.x, textWidth(b.label, 11) + 6, 2, STRIP_WIDTH - 2));
  const boundLanes = assignLanes(boundSpans, 3);
  const height = axisY + 18 + laneCount(boundLanes) * 14 + 6;

  const out: string[] = [];
  // Track names and backgrounds.
  const tracks: [string, number, number][] = [
    ['bands', bandsY, TRACK_H],
    ['host ranges', hostY, TRACK_H],
    ['sockets', sockY, sockRow.height],
    ['leases', leaseY, leaseRow.height],
  ];
  for (const [name, y, hgt] of tracks) {
    out.push(h('text', { x: GUTTER - 10, y: y + Math.min(hgt, TRACK_H) / 2 + 4, class: 'track-name', 'text-anchor': 'end' }, esc(name)));
  }
  out.push(v('rect', { x: s.x0, y: bandsY, width: s.width, height: TRACK_H, class: 'track-bg' }));
  out.push(v('rect', { x: s.x0, y: sockY, width: s.width, height: sockRow.height, class: 'track-bg' }));
  out.push(v('rect', { x: s.x0, y: leaseY, width: s.width, height: leaseRow.height, class: 'track-bg' }));
  // Light grid at the ticks behind the socket and lease tracks.
  for (const t of ticks) out.push(v('path', { d: `M${num(portX(s, t))} ${num(sockY)}V${num(axisY)}`, class: 'grid' }));

  // Host ranges: free ports (white), privileged, the ephemeral range, reserved ports on top.
  const free = `ports ${formatRange(spec.domain)}: outside the ephemeral range and not privileged are free for bands`;
  out.push(trackRect({ x: s.x0, width: s.width }, hostY, 'free tip', free));
  const privileged = hst.unprivilegedStart > 0 ? [{ lo: 0, hi: hst.unprivilegedStart - 1 }] : [];
  const priv = privileged[0] && rangeRect(s, privileged[0], minW);
  if (priv) {
    const tip = `privileged ports 0-${hst.unprivilegedStart - 1} (below net.ipv4.ip_unprivileged_port_start = ${hst.unprivilegedStart}): only root may bind`;
    out.push(trackRect(priv, hostY, 'privileged tip', tip, undefined, spec.ids ? 'privileged' : undefined));
    out.push(insideLabel(priv, hostY + 17, 'privileged', 'in-label'));
  }
  const eph = rangeRect(s, hst.ephemeral, minW);
  if (eph) {
    const unres = hst.unreservedEphemeral.reduce((n, r) => n + r.hi - r.lo + 1, 0);
    const tip =
      `ephemeral range ${formatRange(hst.ephemeral)} (net.ipv4.ip_local_port_range): ` +
      `${hst.ephemeral.hi - hst.ephemeral.lo + 1} ports, ${unres} of them unreserved; any outgoing connect() may take an unreserved one`;
    out.push(trackRect(eph, hostY, 'ephemeral tip', tip, hst.ephemeral, spec.ids ? 'ephemeral' : undefined));
  }
  for (const r of hst.reserved) {
    const rect = rangeRect(s, r, minW);
    const tip = `reserved ${formatRange(r)} (net.ipv4.ip_local_reserved_ports): ${r.hi - r.lo + 1} port(s) the kernel never picks as source ports`;
    if (rect) out.push(trackRect(rect, hostY, 'reserved tip', tip, r));
  }
  // Names inside the parts wide enough: free ports, the unreserved ephemeral ones (when the range shows), reserved ones.
  const name = (r: PortRange, label: string, cls = 'in-label') => {
    const rect = rangeRect(s, r);
    if (rect) out.push(insideLabel(rect, hostY + 17, label, cls));
  };
  const notFree = normalizeRanges([hst.ephemeral, ...privileged]);
  for (const f of subtractRanges(spec.domain, notFree)) name(f, 'room for bands (not ephemeral)', 'in-label free-label');
  if (eph) for (const u of hst.unreservedEphemeral) name(u, `ephemeral ${formatRange(u)}`);
  for (const r of hst.reserved) name(r, `reserved ${formatRange(r)}`);

  // Bands, their conflicts with the unreserved ephemeral range, and instance windows.
  // Label (with its leader) of each band or asked range that has one of its own.
  const ownLabel = new Map<number, string>();
  labelItems.forEach((it, k) => {
    const ly = top + lanes[k]! * LABEL_LANE_H + 12;
    const cx = (it.span.start + it.span.end) / 2;
    const leader = v('path', { d: `M${num(cx)} ${num(ly + 3)}L${num(it.targetX)} ${num(bandsY)}`, class: 'leader' });
    const first = labelled[it.members[0]!]!;
    const cls = it.members.length > 1 ? 'band-label group-label' : first.band ? 'band-label' : 'asked-label';
    const textEl = h('text', { x: cx, y: ly, class: cls, 'text-anchor': 'middle' }, esc(it.label));
    if (it.members.length === 1) ownLabel.set(it.members[0]!, leader + textEl);
    else {
      const names = it.members.map((m) => {
        const l = labelled[m]!;
        return l.band ? `${l.band.name} ${formatRange(l.band)}` : `asked ${formatRange(l.range)}`;
      });
      out.push(h('g', { class: 'band-group tip', 'data-bands': String(it.members.length) }, title(`${it.label}:\n${names.join('\n')}`), leader, textEl));
    }
  });
  labelled.forEach((l, i) => {
    const labelMarkup = ownLabel.get(i) ?? '';
    if (!l.band) {
      out.push(
        h(
          'g',
          { class: 'asked tip', 'data-lo': l.range.lo, 'data-hi': l.range.hi },
          title(`asked range ${formatRange(l.range)}`),
          v('rect', { x: l.rect.x, y: bandsY + 1, width: l.rect.width, height: TRACK_H - 2, class: 'asked-rect' }),
          labelMarkup,
        ),
      );
      return;
    }
    const b = l.band;
    const clash = ephemeralOverlap(b, hst.unreservedEphemeral);
    const parts: string[] = [
      title(`band ${b.name} ${bandText(b)}${clash.length > 0 ? `\nin the unreserved ephemeral range: ${clash.map(formatRange).join(',')}` : ''}`),
    ];
    // Neighbouring bands alternate in lightness so a shared edge is visible without hue.
    const shade = bands.indexOf(b) % 2 === 1 ? ' alt' : '';
    parts.push(v('rect', { x: l.rect.x, y: bandsY, width: l.rect.width, height: TRACK_H, class: `band-rect${shade}` }));
    for (const c of clash) {
      const rect = rangeRect(s, c, minW);
      if (rect) parts.push(trackRect(rect, bandsY, 'conflict', `band ${b.name}: ports ${formatRange(c)} are in the unreserved ephemeral range`, c));
    }
    const wins = bandWindows(b);
    const winPx = b.window ? b.window * pxPerPort(s) : 0;
    if (wins.length > 1 && winPx >= 4) {
      // Numbers every k-th window so they never crowd.
      const every = Math.max(1, Math.ceil((textWidth(`#${wins.length - 1}`, 11) + 6) / winPx));
      wins.forEach((w, idx) => {
        const rect = rangeRect(s, w);
        if (!rect) return;
        if (idx > 0 && w.lo >= s.lo) parts.push(v('path', { d: `M${num(rect.x)} ${num(bandsY + 2)}V${num(bandsY + TRACK_H - 2)}`, class: 'window-line' }));
        if (detail && idx % every === 0 && rect.width >= 10) {
          parts.push(
            h(
              'text',
              { x: rect.x + rect.width / 2, y: bandsY + 17, class: 'win-label', 'text-anchor': 'middle' },
              `#${idx}`,
              title(`${b.name} instance ${idx}: ${formatRange(w)}`),
            ),
          );
        }
      });
    }
    parts.push(labelMarkup);
    out.push(h('g', { class: 'band tip', 'data-band': b.name, 'data-lo': b.lo, 'data-hi': b.hi, 'data-window': b.window }, ...parts));
  });

  // Boundaries of the host ranges as dashed guides through the tracks.
  for (const b of bounds) out.push(v('path', { d: `M${num(b.x)} ${num(bandsY - 2)}V${num(axisY + 4)}`, class: 'guide' }));

  out.push(sockRow.svg, leaseRow.svg);

  // Axis: round ticks in grey, then the exact boundaries in bold lanes below.
  out.push(v('path', { d: `M${num(s.x0)} ${num(axisY)}H${num(right)}`, class: 'axis' }));
  for (const t of ticks) {
    const x = portX(s, t);
    out.push(v('path', { d: `M${num(x)} ${num(axisY)}v4`, class: 'axis' }), h('text', { x, y: axisY + 15, class: 'tick', 'text-anchor': 'middle' }, String(t)));
  }
  bounds.forEach((b, i) => {
    const span = boundSpans[i]!;
    const y = axisY + 30 + boundLanes[i]! * 14;
    out.push(h('text', { x: (span.start + span.end) / 2, y, class: 'bound tip', 'text-anchor': 'middle' }, title(b.tip), esc(b.label)));
  });

  return h(
    'svg',
    {
      id: spec.id,
      class: detail ? 'strip zoom' : 'strip full',
      xmlns: 'http://www.w3.org/2000/svg',
      width: STRIP_WIDTH,
      height,
      viewBox: `0 0 ${STRIP_WIDTH} ${num(height)}`,
      role: 'img',
      'aria-label': spec.label,
      'data-lo': spec.domain.lo,
      'data-hi': spec.domain.hi,
    },
    title(spec.label),
    ...out,
  );
}

/** Domains of the zoomed strips: one per band, one per asked range (merged where they touch). */
export function zoomTargets(report: PortSpaceReport): { range: PortRange; band?: Band }[] {
  const bands = (report.layout?.bands ?? []).map((b) => ({ range: { lo: b.lo, hi: b.hi }, band: b }));
  return [...bands, ...normalizeRanges(report.ranges).map((range) => ({ range }))];
}

