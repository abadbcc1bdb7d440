import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';
import type { Document, Node, Pair, YAMLMap } from 'yaml';
import { BerthError, EXIT } from '../errors.js';
import { EXCERPT_CHARS, quoteExcerpt } from './excerpt.js';

/*
 * What the layout parser and the stack loader share when they read a YAML file the user
 * wrote: node descriptions, "did you mean", line numbers, and the habit of collecting every
 * problem as "file:line: …" and refusing the file once, so it is fixed in one pass.
 */

/** Strict decimal: Number() alone would accept "0x10", " 1", "1e3"; "7_000" slips through YAML as a string. */
export function toUint(s: string): number | undefined {
  if (s.length === 0 || s.length > 9) return undefined;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  return Number(s);
}

/** The text the user wrote for a scalar (numbers keep their spelling, so 0x1F40 is not 8000). */
export function scalarText(node: Node | null | undefined): string | undefined {
  if (!node || !isScalar(node)) return undefined;
  if (typeof node.value === 'string') return node.value;
  if (typeof node.value === 'number') return node.source ?? String(node.value);
  return undefined;
}

/** Like scalarText, but booleans too (env values such as DEBUG: true). */
export function scalarTextOrBool(node: Node | null | undefined): string | undefined {
  if (node && isScalar(node) && typeof node.value === 'boolean') return node.source ?? String(node.value);
  return scalarText(node);
}

/** Absent, or written but empty ("key:" or "key: ~"). */
export function isNullish(node: Node | null | undefined): boolean {
  return node === null || node === undefined || (isScalar(node) && node.value === null);
}

/** What was found, for "…, found X" messages. */
export function kindOf(node: Node | null | undefined): string {
  if (node === null || node === undefined) return 'nothing';
  if (isMap(node)) return 'a mapping';
  if (isSeq(node)) return 'a list';
  if (isScalar(node)) {
    if (node.value === null) return 'nothing';
    return typeof node.value === 'string' ? `the text ${quoteExcerpt(node.value)}` : `${typeof node.value} ${quoteless(String(node.source ?? node.value))}`;
  }
  return 'an unsupported value';
}

/** A number or boolean as written, shortened like a quoted text. */
function quoteless(s: string): string {
  return s.length <= EXCERPT_CHARS ? s : `${s.slice(0, EXCERPT_CHARS - 1)}… (${s.length} characters)`;
}

/** Small edit distance, for "did you mean". */
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

/**
 * ` (did you mean "x"?)` for the allowed word nearest to `word`, at most 2 edits away, or ''.
 * Short words are near everything ("zz" is 2 edits from "p2"), so the edits must also be
 * fewer than half the word; `anyLength` drops that rule for lists of long fixed keys, where
 * "wind" should still suggest "window".
 */
export function didYouMean(word: string, allowed: Iterable<string>, opts: { anyLength?: boolean } = {}): string {
  let best: string | undefined;
  let bestD = 3;
  for (const k of allowed) {
    const d = distance(word.toLowerCase(), k.toLowerCase());
    if (d < bestD && (opts.anyLength || d * 2 < word.length)) {
      best = k;
      bestD = d;
    }
  }
  return best === undefined ? '' : ` (did you mean "${best}"?)`;
}

const READ_REASONS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'it is a directory',
  ENOTDIR: 'a parent of it is not a directory',
  ELOOP: 'too many symbolic links',
};

/** Why a file could not be read, in words ("no such file"). */
export function readReason(err: unknown): string {
  return READ_REASONS[(err as NodeJS.ErrnoException).code ?? ''] ?? (err as Error).message;
}

/**
 * yaml notices an unclosed "{", "[" or quote only where the next line starts; find the line
 * that opened it instead (the nearest earlier line with more openers than closers).
 */
function unclosedBefore(text: string, message: string, errLine: number): { line: number; char: string } | undefined {
  const pairs: [string, string, string, string][] = [
    ['Flow map', '{', '}', '"{"'],
    ['Flow sequence', '[', ']', '"["'],
    ['"quote', '"', '"', 'double quote'],
    ["'quote", "'", "'", 'single quote'],
  ];
  const hit = pairs.find(([m]) => message.includes(m));
  if (!hit) return undefined;
  const [, open, close, shown] = hit;
  const lines = text.split('\n');
  for (let n = Math.min(errLine, lines.length); n >= 1; n--) {
    let opens = 0;
    let closes = 0;
    for (const ch of lines[n - 1]!) {
      if (ch === open) opens++;
      else if (ch === close) closes++;
    }
    if (open === close ? opens % 2 === 1 : opens > closes) return { line: n, char: shown };
  }
  return undefined;
}

/**
 * The yaml parser recurses once per nesting level. About a thousand levels exhaust the stack
 * (reported as a "syntax error"), and V8 may then abort the whole process with a fatal
 * "RegExpCompiler Allocation failed" on a later parse: such text is refused before it is
 * parsed. Flow brackets are counted outside quotes and comments, block nesting by indentation
 * and by compact "- - -" items; the limits are far beyond any layout or stack.
 */
const MAX_FLOW_DEPTH = 100;
const MAX_INDENT = 200;

function tooDeep(text: string): { line: number; what: string } | undefined {
  let depth = 0;
  let line = 1;
  let quote = '';
  let lineStart = true;
  let indent = 0;
  let dashes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\n') {
      line++;
      lineStart = true;
      indent = 0;
      dashes = 0;
      if (quote === "'") continue; // single-quoted scalars may span lines
      quote = quote === '"' ? '"' : '';
      continue;
    }
    if (lineStart) {
      if (c === ' ') {
        if (++indent > MAX_INDENT) return { line, what: `indented more than ${MAX_INDENT} columns` };
        continue;
      }
      if (c === '-' && (text[i + 1] === ' ' || text[i + 1] === '\t')) {
        if (++dashes + indent / 2 > MAX_FLOW_DEPTH) return { line, what: `lists nested more than ${MAX_FLOW_DEPTH} levels deep` };
        indent++;
        continue;
      }
      lineStart = false;
    }
    if (quote !== '') {
      if (c === quote && !(quote === '"' && text[i - 1] === '\\')) quote = '';
      continue;
    }
    if (c === '"' || c === "'") quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) {
      const nl = text.indexOf('\n', i);
      i = (nl < 0 ? text.length : nl) - 1;
    } else if (c === '[' || c === '{') {
      if (++depth > MAX_FLOW_DEPTH) return { line, what: `brackets nested more than ${MAX_FLOW_DEPTH} levels deep` };
    } else if ((c === ']' || c === '}') && depth > 0) depth--;
  }
  return undefined;
}

/**
 * YAML merge keys (`<<: *common`, `<<: [*a, *b]`) are expanded in the document tree itself,
 * because the parsers read nodes, not plain objects: a merged pair is the anchored map's own
 * pair, so its line numbers still point where the user wrote it. Keys written in the map win
 * over merged ones, and earlier sources over later ones (YAML 1.1's merge rule); a map that
 * merges itself is refused rather than expanded forever.
 */
class MergeExpander {
  private readonly done = new Set<Node>();
  private readonly active = new Set<YAMLMap>();

  constructor(
    private readonly doc: Document.Parsed,
    private readonly add: (line: number, text: string) => void,
    private readonly lineOf: (n: Node | null | undefined) => number,
  ) {}

  node(n: Node | null | undefined): void {
    if (!n || isAlias(n) || this.done.has(n)) return;
    if (isMap(n)) this.map(n);
    else if (isSeq(n)) {
      this.done.add(n);
      for (const it of n.items) this.node(it as Node);
    } else this.done.add(n);
  }

  private map(map: YAMLMap): void {
    if (this.done.has(map)) return;
    this.active.add(map);
    const isMerge = (p: Pair<unknown, unknown>) => isScalar(p.key) && typeof p.key.value === 'symbol';
    if (map.items.some(isMerge)) {
      const keyOf = (p: Pair<unknown, unknown>) => (isScalar(p.key) && p.key.value !== null ? String(p.key.value) : undefined);
      const taken = new Set(map.items.filter((p) => !isMerge(p)).map(keyOf).filter((k) => k !== undefined));
      const items: Pair<unknown, unknown>[] = [];
      for (const p of map.items) {
        if (!isMerge(p)) {
          items.push(p);
          continue;
        }
        for (const src of this.sources(p)) {
          for (const q of src.items) {
            const k = keyOf(q);
            if (k !== undefined && taken.has(k)) continue;
            if (k !== undefined) taken.add(k);
            items.push(q);
          }
        }
      }
      map.items = items;
    }
    this.active.delete(map);
    this.done.add(map);
    for (const p of map.items) {
      this.node(p.key as Node | null);
      this.node(p.value as Node | null);
    }
  }

  /** The mappings a `<<` pair merges, each already expanded; problems reported at the `<<`. */
  private sources(p: Pair<unknown, unknown>): YAMLMap[] {
    const line = this.lineOf(p.key as Node);
    const value = p.value as Node | null;
    const listed = value && isSeq(value) ? (value.items as Node[]) : [value];
    const out: YAMLMap[] = [];
    for (const item of listed) {
      let target: Node | null | undefined = item;
      if (isAlias(item)) {
        target = item.resolve(this.doc) as Node | undefined;
        if (target === undefined) {
          this.add(line, `"<<": alias *${item.source} has no matching &${item.source} anchor`);
          continue;
        }
      }
      if (!target || !isMap(target)) {
        this.add(line, `"<<" merges mappings: write "<<: *NAME" or "<<: [*A, *B]" naming mappings anchored with &NAME, found ${kindOf(target)}`);
        continue;
      }
      if (this.active.has(target)) {
        const name = isAlias(item) ? ` *${item.source}` : '';
        this.add(line, `"<<": the mapping${name} merges itself (it contains this "<<"); merge it from outside instead`);
        continue;
      }
      this.map(target);
      out.push(target);
    }
    return out;
  }
}

export interface Problem {
  line: number;
  text: string;
}

/** One YAML file being read: its text, its document, line numbers and the problems found so far. */
export class YamlSource {
  readonly problems: Problem[] = [];
  protected readonly lc = new LineCounter();
  protected doc!: Document.Parsed;

  constructor(
    protected readonly text: string,
    protected readonly file: string,
  ) {}

  /**
   * Parses the text into this.doc; false after reporting its syntax errors. `kind` names
   * the file in the several-documents message ("a layout").
   */
  protected parseText(kind: string): boolean {
    const deep = tooDeep(this.text);
    if (deep !== undefined) {
      this.add(deep.line, `${deep.what}; ${kind} is a few levels deep (is this the right file?)`);
      return false;
    }
    // merge: the parser marks a plain `<<` key as a merge key (a quoted "<<" stays text); the merge itself is expandMerges'.
    this.doc = parseDocument(this.text, { lineCounter: this.lc, uniqueKeys: false, prettyErrors: false, merge: true });
    for (const e of this.doc.errors) {
      const line = this.lineAt(e.pos[0]);
      if (e.code === 'MULTIPLE_DOCS') {
        this.add(line, `the file holds several YAML documents ("---"); ${kind} is a single document`);
        continue;
      }
      const msg = `YAML syntax error: ${e.message.split('\n')[0]}`;
      const opened = unclosedBefore(this.text, e.message, line);
      if (opened) this.add(opened.line, `${msg} (the ${opened.char} opened on this line is never closed)`);
      else this.add(line, msg);
    }
    if (this.doc.errors.length > 0) return false;
    new MergeExpander(this.doc, (line, text) => this.add(line, text), (n) => this.lineOf(n, 1)).node(this.doc.contents as Node | null);
    return true;
  }

  protected lineAt(offset: number): number {
    // Errors at end of input (an unclosed "[") point past the last newline: show the last written line.
    let off = Math.min(offset, this.text.length);
    while (off > 0 && off >= this.text.trimEnd().length) off--;
    return Math.max(1, this.lc.linePos(off).line);
  }

  protected lineOf(node: Node | null | undefined, fallback: number): number {
    const start = node?.range?.[0];
    return start === undefined ? fallback : this.lineAt(start);
  }

  /**
   * True when some value under `node` was written outside lines first..last: an alias or a
   * merged `<<` source anchored elsewhere. Such a node cannot be re-read from those lines alone.
   */
  protected reachesOutside(node: Node | null | undefined, first: number, last: number): boolean {
    const seen = new Set<Node>();
    const walk = (n: Node | null | undefined): boolean => {
      if (!n || seen.has(n)) return false;
      seen.add(n);
      if (isAlias(n)) return walk(n.resolve(this.doc) as Node | undefined) || outside(n);
      if (outside(n)) return true;
      if (isMap(n)) return n.items.some((p) => walk(p.key as Node | null) || walk(p.value as Node | null));
      if (isSeq(n)) return n.items.some((it) => walk(it as Node));
      return false;
    };
    const outside = (n: Node) => {
      const start = n.range?.[0];
      if (start === undefined) return false;
      const line = this.lineAt(start);
      return line < first || line > last;
    };
    return walk(node);
  }

  /** The plain value of a node, aliases and merges resolved. */
  protected plain(node: Node | null | undefined): unknown {
    return node ? node.toJS(this.doc) : null;
  }

  add(line: number, text: string): void {
    this.problems.push({ line, text: `${this.file}:${line}: ${text}` });
  }

  /** Follows `*alias` to its anchored node; undefined for an unknown alias (reported). */
  protected deref(node: Node | null | undefined, line: number, what: string): Node | null | undefined {
    if (!isAlias(node)) return node;
    const target = node.resolve(this.doc) as Node | undefined;
    if (target === undefined) this.add(line, `${what}: alias *${node.source} has no matching &${node.source} anchor`);
    return target;
  }

  /** Every problem, by line (then in the order found), as one BerthError(DATAERR); details.errors holds the lines. */
  error(): BerthError {
    const errors = this.problems.map((x, i) => ({ ...x, i })).sort((a, b) => a.line - b.line || a.i - b.i).map((x) => x.text);
    return new BerthError(EXIT.DATAERR, errors.join('\n'), { file: this.file, errors });
  }
}
