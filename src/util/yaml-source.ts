import { isAlias, isMap, isSeq, LineCounter, parseDocument } from 'yaml';
import type { Document, Node } from 'yaml';
import { BerthError, EXIT } from '../errors.js';
import { MergeExpander } from './yaml-merge-keys.js';
import { tooDeep } from './yaml-nesting-limit.js';

// Shared by the layout and stack readers: every problem collected as "file:line: …", refused once.

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

  /** add(), for `return this.fail(…)` where a reader gives up. */
  protected fail(line: number, text: string): undefined {
    this.add(line, text);
    return undefined;
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
