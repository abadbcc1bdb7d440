// The marker rows of a port-space strip (strip.ts): sockets and leases as small shapes in
// lanes, and in zoomed strips their labels in lanes underneath, tied by leaders.
import type { Band } from '../layout/layout-model.js';
import { cleanText } from '../util/clean-text.js';
import {
  endpoint, expiryText, formatArgv, leaseJobText, placeText, socketOwnerText, stateText, withoutPeer, type ReportLease, type ReportSocket,
} from './format.js';
import { assignLanes, groupByColumn, labelSpan, laneCount, portCenterX, pxPerPort, textWidth, type Scale, type Span } from './geometry.js';
import { esc, h, num, title, v } from './markup.js';
import { formatRange, normalizeRanges } from '../host/intervals.js';

/** Right margin of a strip: labels may run into it. */
export const RIGHT = 24;
/** Label lanes drawn under a zoomed row; more labels are counted, not drawn. */
export const MAX_LABEL_LANES = 6;
const MARKER_LANE_H = 14;
const MAX_MARKER_LANES = 3;

interface Marker {
  kind: 'listener' | 'timewait' | 'other' | 'lease-live' | 'lease-pending';
  x: number;
  /** Hover text: exact numbers and owners. */
  tip: string;
  /** Short label drawn under the marker in zoomed strips. */
  label: string;
  attrs: Record<string, string | number>;
}

const STATE_LABEL: Record<string, string> = { TIME_WAIT: 'TIME_WAIT' };

function socketTip(rows: readonly ReportSocket[], bands: readonly Band[]): string {
  return rows
    .map((r) => {
      const where = placeText(r.localPort, bands);
      const remote = withoutPeer(r) ? '' : ` -> ${endpoint(r.remoteAddress, r.remotePort)}`;
      const cmd = r.owners?.[0] ? `\n  ${formatArgv(r.owners[0].cmdline)}` : '';
      const head = `${stateText(r)} ${endpoint(r.localAddress, r.localPort)}${remote} (IPv${r.family})${where ? ` in ${where}` : ''}`;
      return `${head}\n  owner: ${socketOwnerText(r)}, uid ${r.uid}${cmd}`;
    })
    .join('\n');
}

/** Listeners one by one (keyed by port and owner); other sockets merged per few pixels. */
export function socketMarkers(s: Scale, sockets: readonly ReportSocket[], bands: readonly Band[], detail: boolean): Marker[] {
  const inDomain = sockets.filter((r) => r.localPort >= s.lo && r.localPort <= s.hi);
  const out: Marker[] = [];
  const listeners = new Map<string, ReportSocket[]>();
  for (const r of inDomain.filter((r) => r.state === 'LISTEN')) {
    const key = `${r.localPort}/${r.owners?.[0]?.pid ?? `uid${r.uid}`}`;
    const list = listeners.get(key);
    if (list) list.push(r);
    else listeners.set(key, [r]);
  }
  for (const rows of listeners.values()) {
    const r = rows[0]!;
    const o = r.owners?.[0];
    out.push({
      kind: 'listener',
      x: portCenterX(s, r.localPort),
      tip: socketTip(rows, bands),
      label: `${r.localPort} ${o ? `${o.comm} ${o.pid}` : `uid ${r.uid}`}`,
      attrs: { 'data-port': r.localPort, 'data-pid': o?.pid ?? '', 'data-uid': r.uid, 'data-owner': o?.comm ?? '' },
    });
  }
  // Per port when zoomed in far enough to tell ports apart, else per 6 px column.
  const px = detail && pxPerPort(s) >= 6 ? pxPerPort(s) : 6;
  for (const kind of ['timewait', 'other'] as const) {
    const rows = inDomain.filter((r) => r.state !== 'LISTEN' && (r.state === 'TIME_WAIT') === (kind === 'timewait'));
    for (const col of groupByColumn(rows, (r) => portCenterX(s, r.localPort), px)) {
      const first = col.items[0]!;
      const ports = normalizeRanges(col.items.map((r) => ({ lo: r.localPort, hi: r.localPort })));
      const states = [...new Set(col.items.map((r) => STATE_LABEL[r.state] ?? stateText(r)))].join('/');
      const who = first.owners?.[0]?.comm;
      out.push({
        kind,
        x: col.x,
        tip: socketTip(col.items, bands),
        label: `${ports.map(formatRange).join(',')} ${states}${col.items.length > 1 ? ` ×${col.items.length}` : ''}${who ? ` ${who}` : ''}`,
        attrs: { 'data-port': first.localPort, 'data-count': col.items.length, 'data-state': states },
      });
    }
  }
  return out;
}

export function leaseMarkers(s: Scale, leases: readonly ReportLease[], bands: readonly Band[], reportTime: number): Marker[] {
  return leases
    .filter((l) => l.port >= s.lo && l.port <= s.hi)
    .map((l) => {
      const where = placeText(l.port, bands);
      const name = l.name !== undefined ? cleanText(l.name) : '(unnamed)';
      const owner = l.pid !== undefined ? `pid ${l.pid}` : 'no owner pid';
      const job = leaseJobText(l);
      return {
        kind: l.live ? ('lease-live' as const) : ('lease-pending' as const),
        x: portCenterX(s, l.port),
        tip: `lease ${l.port} "${name}" ${l.live ? 'live' : 'pending (a set in progress: no record ' +
          'yet)'}${where ? ` in ${where}` : ''}\n  ${owner}, expires ${expiryText(l, reportTime)}${job ? `, Slurm job ${job}` : ''}`,
        label: `${l.port} ${name}${l.live ? '' : ' (pending)'}`,
        attrs: { 'data-port': l.port, 'data-name': name, 'data-pid': l.pid ?? '', 'data-live': String(l.live) },
      };
    });
}

function markerShape(m: Marker, y: number): string {
  const x = m.x;
  switch (m.kind) {
    case 'listener':
      return v('path', { d: `M${num(x - 5.5)} ${num(y)}H${num(x + 5.5)}L${num(x)} ${num(y + 10)}Z`, class: 'mk-listener' });
    case 'timewait':
      return v('path', { d: `M${num(x - 4)} ${num(y + 1)}l8 8m0 -8l-8 8`, class: 'mk-timewait' });
    case 'other':
      return v('circle', { cx: x, cy: y + 5, r: 4, class: 'mk-other' });
    case 'lease-live':
    case 'lease-pending':
      return v('path', { d: `M${num(x)} ${num(y)}l5.5 5.5l-5.5 5.5l-5.5 -5.5Z`, class: m.kind === 'lease-live' ? 'mk-lease' : 'mk-lease-pending' });
  }
}

const MARKER_CLASS: Record<Marker['kind'], string> = {
  listener: 'listener',
  timewait: 'sock sock-timewait',
  other: 'sock sock-other',
  'lease-live': 'lease lease-live',
  'lease-pending': 'lease lease-pending',
};

/** A track of markers in lanes, and (zoomed) their labels in lanes underneath with leaders. */
export function markerRow(s: Scale, markers: readonly Marker[], y: number, detail: boolean): { svg: string; height: number } {
  const lanes = assignLanes(markers.map((m) => ({ start: m.x - 6.5, end: m.x + 6.5 })), 1, MAX_MARKER_LANES);
  const trackH = Math.max(1, laneCount(lanes)) * MARKER_LANE_H + 6;
  const parts: string[] = [];
  // Leaders go underneath everything so they never cross a label's text.
  const leaders: string[] = [];
  // A label is the marker's own shape (so it reads which mark it names) followed by the text.
  // The tag starts under its marker (icon right below it) and runs to the right.
  const labelSpans: Span[] = markers.map((m) => {
    const w = textWidth(m.label, 11) + 18;
    return labelSpan(m.x - 6 + w / 2, w, 4, s.x0 + s.width + RIGHT - 2);
  });
  const labelLanes = detail ? assignLanes(labelSpans, 4) : [];
  const shown = labelLanes.filter((l) => l < MAX_LABEL_LANES);
  const labelH = detail && shown.length > 0 ? (Math.max(...shown) + 1) * 17 + 6 : 0;
  let hidden = 0;
  markers.forEach((m, i) => {
    const my = y + 4 + lanes[i]! * MARKER_LANE_H;
    let label = '';
    const lane = labelLanes[i];
    if (detail && lane !== undefined) {
      if (lane < MAX_LABEL_LANES) {
        const span = labelSpans[i]!;
        const ly = y + trackH + 15 + lane * 17;
        const ix = span.start + 6;
        leaders.push(v('path', { d: `M${num(m.x)} ${num(my + 10)}L${num(m.x)} ${num(y + trackH)}L${num(ix)} ${num(ly - 11)}`, class: 'leader' }));
        // A framed tag, so the small copy of the marker's shape does not read as another marker.
        label =
          v('rect', { x: span.start, y: ly - 11.5, width: span.end - span.start, height: 15, rx: 3, class: 'mk-tag' }) +
          h(
            'g',
            { transform: `translate(${num(ix)} ${num(ly - 5)}) scale(0.75) translate(${num(-ix)} ${num(-(ly - 5))})` },
            markerShape({ ...m, x: ix }, ly - 10),
          ) +
          h('text', { x: span.start + 13, y: ly, class: 'mk-label' }, esc(m.label));
      } else hidden++;
    }
    parts.push(h('g', { class: `${MARKER_CLASS[m.kind]} tip`, ...m.attrs }, title(m.tip), markerShape(m, my), label));
  });
  if (hidden > 0) {
    parts.push(
      h(
        'text',
        { x: s.x0 + s.width, y: y + trackH + labelH + 10, class: 'note', 'text-anchor': 'end' },
        esc(`${hidden} more label(s) not drawn; hover the markers or see the tables`),
      ),
    );
  }
  return { svg: leaders.join('') + parts.join(''), height: trackH + labelH + (hidden > 0 ? 14 : 0) };
}
