import { readFileSync } from 'node:fs';
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';
import type { Document, Node, Pair } from 'yaml';
import { BerthError, EXIT } from '../errors.js';
import { formatRange } from '../host/intervals.js';
import type { Band, Layout } from './types.js';

/*
 * Layout file format (YAML; JSON is valid YAML):
 *
 *   bands:
 *     engines: { range: 20000-20799, window: 100 }
 *     proxy:   { range: 21000-21099 }
 *     single:  { range: 7000 }        # one port: same as 7000-7000
 *     web:     22000-22099            # shorthand for { range: 22000-22099 }
 *
 * Every problem is collected and reported at once, one "file:line: …" per line, so
 * a user fixes the whole file in one pass instead of one error per run.
 */

const BAND_KEYS = ['range', 'window'] as const;
const TOP_KEYS = ['bands'] as const;
const NAME_RE = /^[a-z][a-z0-9_-]*$/;
const EXAMPLE = 'bands: { NAME: { range: LO-HI, window: N } }';

interface Problem {
  line: number;
  text: string;
}

/** Strict decimal: Number() alone would accept "0x10", " 1", "1e3", "7_000" slips through YAML as a string. */
function toUint(s: string): number | undefined {
  if (s.length === 0 || s.length > 9) return undefined;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  return Number(s);
}

/** The text the user wrote for a scalar (numbers keep their original spelling, so 0x1F40 is not 8000). */
function scalarText(node: Node): string | undefined {
  if (!isScalar(node)) return undefined;
  if (typeof node.value === 'string') return node.value;
  if (typeof node.value === 'number') return node.source ?? String(node.value);
  return undefined;
}

function kindOf(node: Node | null | undefined): string {
  if (node === null || node === undefined) return 'nothing';
  if (isMap(node)) return 'a mapping';
  if (isSeq(node)) return 'a list';
  if (isScalar(node)) {
    if (node.value === null) return 'nothing';
    return typeof node.value === 'string' ? `the text ${JSON.stringify(node.value)}` : `${typeof node.value} ${String(node.source ?? node.value)}`;
  }
  return 'an unsupported value';
}

/** Small edit distance, to turn "windw" into a "did you mean". */
function distance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

function didYouMean(key: string, allowed: readonly string[]): string {
  const near = allowed.find((k) => distance(key.toLowerCase(), k) <= 2);
  return near ? ` (did you mean "${near}"?)` : '';
}

const allowedList = (keys: readonly string[]) =>
  keys.length === 1 ? `the only key allowed is "${keys[0]}"` : `allowed keys are ${keys.map((k) => `"${k}"`).join(' and ')}`;

class Parser {
  readonly problems: Problem[] = [];
  private readonly lc = new LineCounter();
  private doc!: Document.Parsed;

  constructor(
    private readonly text: string,
    private readonly file: string,
  ) {}

  private lineAt(offset: number): number {
    // Errors at end of input (an unclosed "[") point past the last newline: show the last written line.
    let off = Math.min(offset, this.text.length);
    while (off > 0 && off >= this.text.trimEnd().length) off--;
    return Math.max(1, this.lc.linePos(off).line);
  }

  /**
   * yaml notices an unclosed "{", "[" or quote only where the next line starts; point at the
   * line that opened it instead (the nearest earlier line with more openers than closers).
   */
  private unclosedBefore(message: string, errLine: number): { line: number; char: string } | undefined {
    const pairs: [string, string, string, string][] = [
      ['Flow map', '{', '}', '"{"'],
      ['Flow sequence', '[', ']', '"["'],
      ['"quote', '"', '"', 'double quote'],
      ["'quote", "'", "'", 'single quote'],
    ];
    const hit = pairs.find(([m]) => message.includes(m));
    if (!hit) return undefined;
    const [, open, close, shown] = hit;
    const lines = this.text.split('\n');
    for (let n = Math.min(errLine, lines.length); n >= 1; n--) {
      const l = lines[n - 1]!;
      let opens = 0;
      let closes = 0;
      for (const ch of l) {
        if (ch === open) opens++;
        else if (ch === close) closes++;
      }
      const unbalanced = open === close ? opens % 2 === 1 : opens > closes;
      if (unbalanced) return { line: n, char: shown };
    }
    return undefined;
  }

  private lineOf(node: Node | null | undefined, fallback: number): number {
    const start = node?.range?.[0];
    return start === undefined ? fallback : this.lineAt(start);
  }

  private add(line: number, text: string): void {
    this.problems.push({ line, text: `${this.file}:${line}: ${text}` });
  }

  /** Follows `*alias` to its anchored node; undefined for an unknown alias (reported). */
  private deref(node: Node | null | undefined, line: number, what: string): Node | null | undefined {
    if (!isAlias(node)) return node;
    const target = node.resolve(this.doc) as Node | undefined;
    if (target === undefined) this.add(line, `${what}: alias *${node.source} has no matching &${node.source} anchor`);
    return target;
  }

  parse(): Band[] {
    this.doc = parseDocument(this.text, { lineCounter: this.lc, uniqueKeys: false, prettyErrors: false });
    if (this.doc.errors.length > 0) {
      for (const e of this.doc.errors) {
        const line = this.lineAt(e.pos[0]);
        if (e.code === 'MULTIPLE_DOCS') {
          this.add(line, 'the file holds several YAML documents ("---"); a layout is a single document');
          continue;
        }
        const msg = `YAML syntax error: ${e.message.split('\n')[0]}`;
        const opened = this.unclosedBefore(e.message, line);
        if (opened) this.add(opened.line, `${msg} (the ${opened.char} opened on this line is never closed)`);
        else this.add(line, msg);
      }
      return [];
    }
    const top = this.deref(this.doc.contents as Node | null, 1, 'top level');
    if (top === null || top === undefined || (isScalar(top) && top.value === null)) {
      this.add(1, `the layout is empty; expected ${EXAMPLE}`);
      return [];
    }
    if (!isMap(top)) {
      this.add(this.lineOf(top, 1), `the top level must be a mapping with a "bands" key, found ${kindOf(top)}; expected ${EXAMPLE}`);
      return [];
    }
    let bandsPair: Pair<unknown, unknown> | undefined;
    for (const pair of top.items) {
      const key = pair.key as Node | null;
      const line = this.lineOf(key, 1);
      const name = key !== null && isScalar(key) ? String(key.value) : undefined;
      if (name === 'bands') {
        if (bandsPair) this.add(line, `"bands" appears twice (first at line ${this.lineOf(bandsPair.key as Node, 1)}); merge them into one mapping`);
        else bandsPair = pair;
      } else {
        const shown = name === undefined ? 'a non-text key' : `"${name}"`;
        this.add(line, `unknown top-level key ${shown}${name ? didYouMean(name, TOP_KEYS) : ''}; ${allowedList(TOP_KEYS)}`);
      }
    }
    if (!bandsPair) {
      this.add(this.lineOf(top, 1), `no "bands" key at the top level; expected ${EXAMPLE}`);
      return [];
    }
    const keyLine = this.lineOf(bandsPair.key as Node, 1);
    const bandsNode = this.deref(bandsPair.value as Node | null, keyLine, '"bands"');
    // "bands:" with every band commented out is an empty layout, not a syntax problem; doctor reports it.
    if (bandsNode === null || bandsNode === undefined || (isScalar(bandsNode) && bandsNode.value === null)) return [];
    if (!isMap(bandsNode)) {
      this.add(this.lineOf(bandsNode, keyLine), `"bands" must be a mapping of band names to { range: LO-HI, window: N }, found ${kindOf(bandsNode)}`);
      return [];
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
    if (raw === undefined) {
      this.add(line, `band names must be plain text, found ${kindOf(key)}`);
      return undefined;
    }
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
    if (value === null || value === undefined || (isScalar(value) && value.value === null)) {
      this.add(line, `${label}: has no value; expected { range: LO-HI } or { range: LO-HI, window: N }`);
      return undefined;
    } else if (isScalar(value)) {
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
        this.add(kLine, `${label}: unknown key ${shown}${kName ? didYouMean(kName, BAND_KEYS) : ''}; ${allowedList(BAND_KEYS)}`);
        ok = false;
      }
      if (!rangeSeen) {
        this.add(line, `${label}: missing "range: LO-HI"`);
        return undefined;
      }
    } else {
      this.add(line, `${label}: expected { range: LO-HI } or { range: LO-HI, window: N }, found ${kindOf(value)}`);
      return undefined;
    }

    const range = this.range(rangeNode, line, label);
    const window = hasWindow ? this.window(windowNode, line, label) : undefined;
    if (!range || (hasWindow && window === undefined)) return undefined;
    const size = range.hi - range.lo + 1;
    if (window !== undefined && window > size) {
      this.add(this.lineOf(windowNode, line), `${label}: window ${window} is larger than the band (range ${formatRange(range)} has ${size} port${size === 1 ? '' : 's'}); use a window of at most ${size} or widen the range`);
      return undefined;
    }
    if (!ok) return undefined;
    const band: Band = { name: raw, lo: range.lo, hi: range.hi, line };
    if (window !== undefined) band.window = window;
    return band;
  }

  private range(node: Node | null | undefined, bandLine: number, label: string): { lo: number; hi: number } | undefined {
    const line = this.lineOf(node, bandLine);
    const text = node ? scalarText(node) : undefined;
    if (text === undefined) {
      this.add(line, `${label}: range must be LO-HI (e.g. 20000-20799) or a single port, found ${kindOf(node)}`);
      return undefined;
    }
    const t = text.trim();
    const dash = t.indexOf('-');
    const loText = dash < 0 ? t : t.slice(0, dash).trim();
    const hiText = dash < 0 ? t : t.slice(dash + 1).trim();
    const lo = toUint(loText);
    const hi = toUint(hiText);
    if (lo === undefined || hi === undefined) {
      this.add(line, `${label}: range ${JSON.stringify(text)} is not LO-HI (e.g. 20000-20799) or a single port`);
      return undefined;
    }
    const shown = dash < 0 ? String(lo) : `${lo}-${hi}`;
    if (lo < 1 || hi < 1 || lo > 65535 || hi > 65535) {
      this.add(line, `${label}: range ${shown} goes outside the TCP ports 1-65535`);
      return undefined;
    }
    if (lo > hi) {
      this.add(line, `${label}: range ${shown} has lo > hi; write it as LO-HI with LO ≤ HI`);
      return undefined;
    }
    return { lo, hi };
  }

  private window(node: Node | null | undefined, bandLine: number, label: string): number | undefined {
    const line = this.lineOf(node, bandLine);
    const text = node ? scalarText(node) : undefined;
    const n = text === undefined ? undefined : toUint(text.trim());
    if (n === undefined || n < 1) {
      this.add(line, `${label}: window must be a whole number of ports ≥ 1, found ${kindOf(node)}`);
      return undefined;
    }
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
  if (p.problems.length > 0) {
    // Stable sort: by line, then in the order found.
    const errors = p.problems.map((x, i) => ({ ...x, i })).sort((a, b) => a.line - b.line || a.i - b.i).map((x) => x.text);
    throw new BerthError(EXIT.DATAERR, errors.join('\n'), { file, errors });
  }
  return { source: file, bands };
}

const READ_REASONS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'it is a directory',
  ENOTDIR: 'a parent of it is not a directory',
};

/** Reads and parses a layout file; an unreadable file is a DATAERR naming it. */
export function loadLayout(file: string): Layout {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
    const reason = READ_REASONS[code] ?? (err as Error).message;
    throw new BerthError(EXIT.DATAERR, `${file}: cannot read layout file: ${reason}`, { file, code });
  }
  return parseLayout(text, file);
}
