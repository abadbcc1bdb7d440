import { isAlias, isMap, isScalar } from 'yaml';
import type { Node, Pair } from 'yaml';
import { BerthError, EXIT } from '../errors.js';
import { formatRange } from '../host/intervals.js';
import { readInputFile } from '../util/safe-file.js';
import { quoteExcerpt } from '../util/excerpt.js';
import { didYouMean } from '../util/did-you-mean.js';
import { readReason, YamlSource } from '../util/yaml-source.js';
import { isNullish, kindOf, scalarText, toUint } from '../util/yaml-values.js';
import type { Band, Layout } from './layout-model.js';

/*
 * Layout file (YAML; JSON is valid YAML): `bands: { engines: { range: 20000-20799, window: 100 } }`;
 * `web: 22000-22099` is short for { range: … }, `range: 7000` one port. Every problem is reported
 * at once, one "file:line: …" per line, so a user fixes the whole file in one pass.
 */

const BAND_KEYS = ['range', 'window'] as const;
const TOP_KEYS = ['bands'] as const;
const NAME_RE = /^[a-z][a-z0-9_-]*$/;
const EXAMPLE = 'bands: { NAME: { range: LO-HI, window: N } }';

/** Band and top-level keys are all long: a short typo such as "wind" still suggests "window". */
const suggest = (key: string, allowed: readonly string[]) => didYouMean(key, allowed, { anyLength: true });

const allowedList = (keys: readonly string[]) =>
  keys.length === 1 ? `the only key allowed is "${keys[0]}"` : `allowed keys are ${keys.map((k) => `"${k}"`).join(' and ')}`;

class Parser extends YamlSource {
  /** The bands; undefined once a problem (reported) leaves nothing to read. */
  parse(): Band[] | undefined {
    if (!this.parseText('a layout')) return undefined;
    const top = this.deref(this.doc.contents as Node | null, 1, 'top level');
    if (isNullish(top)) return this.fail(1, `the layout is empty; expected ${EXAMPLE}`);
    if (!isMap(top)) return this.fail(this.lineOf(top, 1), `the top level must be a mapping with a "bands" key, found ${kindOf(top)}; expected ${EXAMPLE}`);
    let bandsPair: Pair<unknown, unknown> | undefined;
    for (const pair of top.items) {
      const key = pair.key as Node | null;
      const line = this.lineOf(key, 1);
      const name = key !== null && isScalar(key) ? String(key.value) : undefined;
      if (name === 'bands') {
        if (bandsPair) this.add(line, `"bands" appears twice (first at line ${this.lineOf(bandsPair.key as Node, 1)}); merge them into one mapping`);
        else bandsPair = pair;
      } else if (name?.startsWith('x-')) {
        // extension keys, a home for &anchors merged into bands with "<<: *name" (as in stack files)
      } else {
        const shown = name === undefined ? 'a non-text key' : `"${name}"`;
        this.add(line, `unknown top-level key ${shown}${name ? suggest(name, TOP_KEYS) : ''}; ${allowedList(TOP_KEYS)}`);
      }
    }
    if (!bandsPair) return this.fail(this.lineOf(top, 1), `no "bands" key at the top level; expected ${EXAMPLE}`);
    const keyLine = this.lineOf(bandsPair.key as Node, 1);
    const bandsNode = this.deref(bandsPair.value as Node | null, keyLine, '"bands"');
    // "bands:" with every band commented out is an empty layout, not a syntax problem; doctor reports it.
    if (isNullish(bandsNode)) return [];
    if (!isMap(bandsNode)) {
      return this.fail(this.lineOf(bandsNode, keyLine), `"bands" must be a mapping of band names to { range: LO-HI, window: N }, found ${kindOf(bandsNode)}`);
    }
    const bands: Band[] = [];
    const seen = new Map<string, number>();
    for (const pair of bandsNode.items) {
      const band = this.band(pair, keyLine, seen);
      if (band) bands.push(band);
    }
    this.overlaps(bands);
    return bands;
  }

  private band(pair: Pair<unknown, unknown>, parentLine: number, seen: Map<string, number>): Band | undefined {
    const key = pair.key as Node | null;
    const line = this.lineOf(key, parentLine);
    const raw = key !== null && isScalar(key) && key.value !== null ? String(key.value) : undefined;
    if (raw === undefined) return this.fail(line, `band names must be plain text, found ${kindOf(key)}`);
    const label = `band ${JSON.stringify(raw)}`;
    let ok = true;
    if (!NAME_RE.test(raw)) {
      this.add(line, `${label}: invalid name; use lowercase letters, digits, "_" and "-", starting with a letter`);
      ok = false;
    }
    const first = seen.get(raw);
    if (first !== undefined) {
      this.add(line, `${label}: defined twice (first at line ${first}); each band name must be unique`);
      ok = false;
    } else seen.set(raw, line);

    const value = this.deref(pair.value as Node | null, line, label);
    if (value === undefined && isAlias(pair.value)) return undefined;
    let rangeNode: Node | null | undefined;
    let windowNode: Node | null | undefined;
    let hasWindow = false;
    if (isNullish(value)) return this.fail(line, `${label}: has no value; expected { range: LO-HI } or { range: LO-HI, window: N }`);
    if (isScalar(value)) {
      rangeNode = value; // shorthand: "web: 22000-22099"
    } else if (isMap(value)) {
      let rangeSeen = false;
      for (const p of value.items) {
        const k = p.key as Node | null;
        const kLine = this.lineOf(k, line);
        const kName = k !== null && isScalar(k) ? String(k.value) : undefined;
        if (kName === 'range' || kName === 'window') {
          if ((kName === 'range' && rangeSeen) || (kName === 'window' && hasWindow)) {
            this.add(kLine, `${label}: "${kName}" is given twice`);
            ok = false;
            continue;
          }
          const v = this.deref(p.value as Node | null, kLine, label);
          if (kName === 'range') {
            rangeSeen = true;
            rangeNode = v ?? null;
          } else {
            hasWindow = true;
            windowNode = v ?? null;
          }
          continue;
        }
        const shown = kName === undefined ? 'a non-text key' : `"${kName}"`;
        this.add(kLine, `${label}: unknown key ${shown}${kName ? suggest(kName, BAND_KEYS) : ''}; ${allowedList(BAND_KEYS)}`);
        ok = false;
      }
      if (!rangeSeen) return this.fail(line, `${label}: missing "range: LO-HI"`);
    } else return this.fail(line, `${label}: expected { range: LO-HI } or { range: LO-HI, window: N }, found ${kindOf(value)}`);

    const range = this.range(rangeNode, line, label);
    const window = hasWindow ? this.window(windowNode, line, label) : undefined;
    if (!range || (hasWindow && window === undefined)) return undefined;
    const size = range.hi - range.lo + 1;
    if (window !== undefined && window > size) {
      const has = `range ${formatRange(range)} has ${size} port${size === 1 ? '' : 's'}`;
      const fix = `use a window of at most ${size} or widen the range`;
      return this.fail(this.lineOf(windowNode, line), `${label}: window ${window} is larger than the band (${has}); ${fix}`);
    }
    if (!ok) return undefined;
    const band: Band = { name: raw, lo: range.lo, hi: range.hi, line };
    if (window !== undefined) band.window = window;
    return band;
  }

  private range(node: Node | null | undefined, bandLine: number, label: string): { lo: number; hi: number } | undefined {
    const line = this.lineOf(node, bandLine);
    const text = scalarText(node);
    if (text === undefined) return this.fail(line, `${label}: range must be LO-HI (e.g. 20000-20799) or a single port, found ${kindOf(node)}`);
    const t = text.trim();
    const dash = t.indexOf('-');
    const loText = dash < 0 ? t : t.slice(0, dash).trim();
    const hiText = dash < 0 ? t : t.slice(dash + 1).trim();
    const lo = toUint(loText);
    const hi = toUint(hiText);
    if (lo === undefined || hi === undefined) return this.fail(line, `${label}: range ${quoteExcerpt(text)} is not LO-HI (e.g. 20000-20799) or a single port`);
    const shown = dash < 0 ? String(lo) : `${lo}-${hi}`;
    if (lo < 1 || hi < 1 || lo > 65535 || hi > 65535) return this.fail(line, `${label}: range ${shown} goes outside the TCP ports 1-65535`);
    if (lo > hi) return this.fail(line, `${label}: range ${shown} has lo > hi; write it as LO-HI with LO ≤ HI`);
    return { lo, hi };
  }

  private window(node: Node | null | undefined, bandLine: number, label: string): number | undefined {
    const line = this.lineOf(node, bandLine);
    const text = scalarText(node);
    const n = text === undefined ? undefined : toUint(text.trim());
    if (n === undefined || n < 1) return this.fail(line, `${label}: window must be a whole number of ports ≥ 1, found ${kindOf(node)}`);
    return n;
  }

  /** Pairwise: layouts hold tens of bands, and every overlapping pair deserves its own line. */
  private overlaps(bands: Band[]): void {
    for (let j = 1; j < bands.length; j++) {
      const b = bands[j]!;
      for (let i = 0; i < j; i++) {
        const a = bands[i]!;
        const lo = Math.max(a.lo, b.lo);
        const hi = Math.min(a.hi, b.hi);
        if (lo > hi) continue;
        this.add(b.line ?? 1, `band "${b.name}" overlaps band "${a.name}" (line ${a.line}) on ports ${formatRange({ lo, hi })}; bands must not share ports`);
      }
    }
  }
}

/**
 * Parses and validates a layout. Throws one BerthError(DATAERR) listing every problem,
 * one "file:line: …" per line (details.errors holds the same lines as an array).
 */
export function parseLayout(text: string, file: string): Layout {
  const p = new Parser(text, file);
  const bands = p.parse();
  if (p.problems.length > 0 || !bands) throw p.error();
  return { source: file, bands };
}

/** Reads and parses a layout file; an unreadable file is a DATAERR naming it. */
export function loadLayout(file: string): Layout {
  let text: string;
  try {
    text = readInputFile(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
    throw new BerthError(EXIT.DATAERR, `${file}: cannot read layout file: ${readReason(err)}`, { file, code });
  }
  return parseLayout(text, file);
}
