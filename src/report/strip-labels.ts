// Where the names of bands and asked ranges go above a strip (strip.ts). Pure.
import { formatRange } from '../host/intervals.js';
import type { PortRange } from '../host/host-map.js';
import type { Band } from '../layout/layout-model.js';
import { assignLanes, labelSpan, laneCount, textWidth, type Span } from './geometry.js';
import { MAX_LABEL_LANES } from './strip-markers.js';

export const STRIP_WIDTH = 1200;
const LABEL_FONT = 12;

export interface Labelled {
  range: PortRange;
  rect: { x: number; width: number };
  label: string;
  band?: Band;
}

interface LabelItem {
  label: string;
  span: Span;
  /** Where the leader points: the middle of the member(s) on the strip. */
  targetX: number;
  /** Indices into the labelled list. */
  members: number[];
}

/**
 * Labels for bands and asked ranges above the strip, in as few lanes as it takes: "name lo-hi";
 * when that needs too many lanes, names alone; when even that does, each run of colliding
 * labels becomes one "N bands lo-hi" label (the zoomed strips name them all).
 */
export function placeRangeLabels(labelled: readonly Labelled[]): { items: LabelItem[]; lanes: number[] } {
  const spanFor = (text: string, cx: number) => labelSpan(cx, textWidth(text, LABEL_FONT) + 8, 4, STRIP_WIDTH - 4);
  const single = (text: (l: Labelled) => string): LabelItem[] =>
    labelled.map((l, i) => {
      const cx = l.rect.x + l.rect.width / 2;
      return { label: text(l), span: spanFor(text(l), cx), targetX: cx, members: [i] };
    });
  let items = single((l) => l.label);
  let lanes = assignLanes(items.map((it) => it.span), 6);
  if (laneCount(lanes) <= MAX_LABEL_LANES) return { items, lanes };
  items = single((l) => (l.band ? l.band.name : formatRange(l.range)));
  lanes = assignLanes(items.map((it) => it.span), 6);
  if (laneCount(lanes) <= MAX_LABEL_LANES) return { items, lanes };
  // Runs of overlapping name labels, left to right, each merged into one.
  const order = items.map((_, i) => i).sort((a, b) => items[a]!.span.start - items[b]!.span.start);
  const runs: number[][] = [];
  let end = Number.NEGATIVE_INFINITY;
  for (const i of order) {
    const sp = items[i]!.span;
    const last = runs[runs.length - 1];
    if (last && sp.start < end + 6) {
      last.push(i);
      end = Math.max(end, sp.end);
    } else {
      runs.push([i]);
      end = sp.end;
    }
  }
  const merged = runs.map((run): LabelItem => {
    if (run.length === 1) return items[run[0]!]!;
    const ls = run.map((i) => labelled[i]!);
    const lo = Math.min(...ls.map((l) => l.range.lo));
    const hi = Math.max(...ls.map((l) => l.range.hi));
    const what = ls.every((l) => l.band) ? 'bands' : ls.some((l) => l.band) ? 'bands and ranges' : 'ranges';
    const label = `${ls.length} ${what} ${formatRange({ lo, hi })}`;
    const x0 = Math.min(...ls.map((l) => l.rect.x));
    const x1 = Math.max(...ls.map((l) => l.rect.x + l.rect.width));
    const cx = (x0 + x1) / 2;
    return { label, span: spanFor(label, cx), targetX: cx, members: run };
  });
  return { items: merged, lanes: assignLanes(merged.map((it) => it.span), 6) };
}
