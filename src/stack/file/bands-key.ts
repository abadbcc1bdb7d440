import { resolve } from 'node:path';
import type { Node, Pair } from 'yaml';
import { BerthError } from '../../errors.js';
import { parseLayout } from '../../layout/parse.js';
import type { Layout } from '../../layout/layout-model.js';
import { readReason } from '../../util/yaml-source.js';
import { kindOf, scalarText } from '../../util/yaml-values.js';
import { readInputFile } from '../../util/safe-file.js';
import type { YamlReader } from './ports-key.js';
import { shownPath } from './shown-path.js';

/*
 * A stack's bands: `layout: FILE` (relative to the stack file) or inline `bands:` (layout
 * syntax), read by the layout parser itself so both say the same things. Undefined when the
 * layout is broken (reported): the services' bands are then not looked up.
 */

/** What the layout keys need of the stack's parser beyond YamlReader. */
export interface BandsReader extends YamlReader {
  readonly file: string;
  readonly baseDir: string;
  readonly text: string;
  /** The line of an offset, as the YAML line counter has it. */
  linePos(offset: number): number;
  reachesOutside(node: Node | null | undefined, first: number, last: number): boolean;
  plain(node: Node | null | undefined): unknown;
  /** A problem already saying "file:line:" (the layout parser's own). */
  addAsIs(line: number, text: string): void;
}

/** `layout: FILE`, read and parsed; undefined when it is broken (reported). */
export function readLayoutKey(pair: Pair<unknown, unknown>, r: BandsReader): Layout | undefined {
  const line = r.lineOf(pair.key as Node, 1);
  const v = r.deref(pair.value as Node | null, line, '"layout"');
  const rel = scalarText(v);
  if (rel === undefined || rel.trim() === '') {
    r.add(r.lineOf(v, line), `"layout" must be the path of a layout file (relative to this stack file), found ${kindOf(v)}`);
    return undefined;
  }
  const abs = resolve(r.baseDir, rel);
  const shown = shownPath(abs);
  let text: string;
  try {
    text = readInputFile(abs);
  } catch (e) {
    r.add(line, `layout ${JSON.stringify(rel)}: cannot read ${shown}: ${readReason(e)}`);
    return undefined;
  }
  try {
    return parseLayout(text, shown);
  } catch (e) {
    if (!(e instanceof BerthError)) throw e;
    // The layout's own "file:line:" messages; listed where the stack names the layout.
    const errors = (e.details?.errors as string[] | undefined) ?? [e.message];
    for (const text of errors) r.addAsIs(line, text);
    return undefined;
  }
}

/**
 * Inline `bands:` are read by the layout parser itself, so both accept the same syntax and
 * say the same things. It is given the stack text with every other line blanked, which
 * keeps line numbers right. A one-line (JSON) stack falls back to the bands alone.
 */
export function readBandsKey(pair: Pair<unknown, unknown>, topItems: Pair<unknown, unknown>[], r: BandsReader): Layout | undefined {
  const keyNode = pair.key as Node;
  const valueNode = pair.value as Node | null;
  const first = r.lineOf(keyNode, 1);
  const endOffset = valueNode?.range?.[1] ?? keyNode.range?.[1] ?? 0;
  const last = Math.max(first, r.linePos(Math.max(0, endOffset - 1)));
  const shared =
    r.reachesOutside(valueNode, first, last) || topItems.some((p) => p !== pair && r.lineOf(p.key as Node, 0) >= first && r.lineOf(p.key as Node, 0) <= last);
  const text = shared
    ? `${'\n'.repeat(first - 1)}bands: ${JSON.stringify(r.plain(valueNode))}\n`
    : r.text.split('\n').map((l, i) => (i + 1 >= first && i + 1 <= last ? l : '')).join('\n');
  try {
    return { ...parseLayout(text, r.file), source: r.file };
  } catch (e) {
    if (!(e instanceof BerthError)) throw e;
    const errors = (e.details?.errors as string[] | undefined) ?? [e.message];
    for (const t of errors) {
      const m = /^.*?:(\d+): /.exec(t);
      r.addAsIs(m ? Number(m[1]) : first, t);
    }
    return undefined;
  }
}
