// Pure geometry of the port-space picture: where ports fall on a strip, which rectangles
// ranges become, where a zoomed strip looks, and which labels must move to another lane.
// No SVG here, so every number the picture draws can be unit-tested.
import { intersectRanges, normalizeRanges } from '../host/intervals.js';
import type { PortRange } from '../host/host-map.js';
import type { Band } from '../layout/layout-model.js';

const PORT_MIN = 0;
const PORT_MAX = 65535;

/** A linear map of the inclusive port interval [lo, hi] onto [x0, x0 + width). */
export interface Scale {
  lo: number;
  hi: number;
  x0: number;
  width: number;
}

export interface Rect {
  x: number;
  width: number;
}

export function makeScale(domain: PortRange, x0: number, width: number): Scale {
  if (!(domain.lo <= domain.hi)) throw new RangeError(`empty scale domain ${domain.lo}-${domain.hi}`);
  if (!(width > 0)) throw new RangeError(`scale width must be positive, got ${width}`);
  return { lo: domain.lo, hi: domain.hi, x0, width };
}

export function pxPerPort(s: Scale): number {
  return s.width / (s.hi - s.lo + 1);
}

/** Left edge of port's cell: cells are equal, so adjacent ranges share an edge; ports outside the domain clamp to its ends. */
export function portX(s: Scale, port: number): number {
  const p = Math.min(Math.max(port, s.lo), s.hi + 1);
  return s.x0 + (p - s.lo) * pxPerPort(s);
}

/** Middle of port's cell: where a marker for a single port goes. */
export function portCenterX(s: Scale, port: number): number {
  return portX(s, port) + pxPerPort(s) / 2;
}

/** Inverse of portX: the port whose cell contains x (clamped to the domain). */
export function xToPort(s: Scale, x: number): number {
  const p = s.lo + Math.floor((x - s.x0) / pxPerPort(s));
  return Math.min(Math.max(p, s.lo), s.hi);
}

/** A range's rectangle clipped to the domain (undefined outside it); widened about its centre to minWidth so one port still shows. */
export function rangeRect(s: Scale, r: PortRange, minWidth = 0): Rect | undefined {
  const clipped = intersectRanges(r, { lo: s.lo, hi: s.hi });
  if (!clipped) return undefined;
  const x = portX(s, clipped.lo);
  const width = portX(s, clipped.hi + 1) - x;
  if (width >= minWidth) return { x, width };
  const w = Math.min(minWidth, s.width);
  const centre = x + width / 2;
  const left = Math.min(Math.max(centre - w / 2, s.x0), s.x0 + s.width - w);
  return { x: left, width: w };
}

/** A zoomed strip's domain: the range with a margin so its neighbours show, at least minSpan ports wide, within 0-65535. */
export function zoomDomain(r: PortRange, { padFraction = 0.06, minSpan = 64 }: { padFraction?: number; minSpan?: number } = {}): PortRange {
  const size = r.hi - r.lo + 1;
  const span = Math.max(size + 2 * Math.ceil(size * padFraction), minSpan);
  let lo = r.lo - Math.floor((span - size) / 2);
  let hi = lo + span - 1;
  if (lo < PORT_MIN) {
    hi += PORT_MIN - lo;
    lo = PORT_MIN;
  }
  if (hi > PORT_MAX) {
    lo = Math.max(PORT_MIN, lo - (hi - PORT_MAX));
    hi = PORT_MAX;
  }
  return { lo, hi };
}

/** The parts of a band the kernel may hand out as ephemeral source ports (its conflicts). */
export function ephemeralOverlap(band: PortRange, unreservedEphemeral: readonly PortRange[]): PortRange[] {
  return normalizeRanges(unreservedEphemeral).flatMap((e) => intersectRanges(band, e) ?? []);
}

/** Instance windows of a band (instance i at index i); one window for a band without one. */
export function bandWindows(band: Band): PortRange[] {
  const w = band.window;
  if (w === undefined || !(w > 0)) return [{ lo: band.lo, hi: band.hi }];
  const out: PortRange[] = [];
  for (let lo = band.lo; lo <= band.hi; lo += w) out.push({ lo, hi: Math.min(lo + w - 1, band.hi) });
  return out;
}

/** Which band (and instance window) a port falls in; the first band wins where bands overlap. */
export function locatePort(port: number, bands: readonly Band[]): { band: Band; instance?: number } | undefined {
  for (const band of bands) {
    if (port < band.lo || port > band.hi) continue;
    if (band.window !== undefined && band.window > 0) return { band, instance: Math.floor((port - band.lo) / band.window) };
    return { band };
  }
  return undefined;
}

export interface Span {
  start: number;
  end: number;
}

/**
 * Lane of each span (input order), greedy by start: the lowest lane whose last span ended gap before it;
 * beyond maxLanes, the lane that ends first (spans may then overlap).
 */
export function assignLanes(spans: readonly Span[], gap = 0, maxLanes = Number.POSITIVE_INFINITY): number[] {
  const order = spans.map((_, i) => i).sort((a, b) => spans[a]!.start - spans[b]!.start || a - b);
  const laneEnd: number[] = [];
  const lanes = new Array<number>(spans.length).fill(0);
  for (const i of order) {
    const s = spans[i]!;
    let lane = laneEnd.findIndex((end) => s.start >= end + gap);
    if (lane === -1) {
      if (laneEnd.length < maxLanes) lane = laneEnd.length;
      else lane = laneEnd.indexOf(Math.min(...laneEnd));
    }
    laneEnd[lane] = Math.max(laneEnd[lane] ?? Number.NEGATIVE_INFINITY, s.end);
    lanes[i] = lane;
  }
  return lanes;
}

export function laneCount(lanes: readonly number[]): number {
  return lanes.length === 0 ? 0 : Math.max(...lanes) + 1;
}

/** A label of this width centred on cx, shifted to stay inside [min, max] (port 0's does not hang off the edge). */
export function labelSpan(cx: number, width: number, min: number, max: number): Span {
  let start = cx - width / 2;
  if (start + width > max) start = max - width;
  if (start < min) start = min;
  return { start, end: start + width };
}

/** Text width in the page's font, estimated generously (no metrics without a browser): too wide only costs space. */
export function textWidth(text: string, fontSize: number): number {
  let units = 0;
  for (const ch of text) {
    if ('il.,:;|!\'I()[] '.includes(ch)) units += 0.34;
    else if ('mwMW@'.includes(ch)) units += 0.9;
    else if (ch >= 'A' && ch <= 'Z') units += 0.7;
    else units += 0.6;
  }
  return units * fontSize;
}

/** Round tick positions (1, 2, 5 × 10^k steps) inside domain, at most about maxTicks of them. */
export function niceTicks(domain: PortRange, maxTicks: number): number[] {
  const span = domain.hi - domain.lo;
  if (span <= 0 || maxTicks < 1) return [domain.lo];
  const raw = span / maxTicks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const out: number[] = [];
  for (let t = Math.ceil(domain.lo / step) * step; t <= domain.hi; t += step) out.push(t);
  return out;
}

/** Items on the same `px`-wide column as one group, so a thousand TIME_WAIT sockets are a few markers, not a smear. */
export function groupByColumn<T>(items: readonly T[], x: (item: T) => number, px = 1): { x: number; items: T[] }[] {
  const cols = new Map<number, { sum: number; items: T[] }>();
  for (const it of items) {
    const xi = x(it);
    const key = Math.round(xi / px);
    const col = cols.get(key) ?? { sum: 0, items: [] };
    col.sum += xi;
    col.items.push(it);
    cols.set(key, col);
  }
  // The marker sits at the mean x of its members, so a lone socket keeps its exact place.
  return [...cols.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => ({ x: c.sum / c.items.length, items: c.items }));
}
