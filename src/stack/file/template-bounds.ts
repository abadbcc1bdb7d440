/*
 * Bounds on what a config template may render to. Nested list sections multiply: 40 nested
 * {{#e.replicas}} over 2 replicas render 2^40 copies (a core pinned, every signal waiting behind
 * the synchronous render), and 5,000 levels overflow the stack. Both are found before rendering,
 * in time linear in the template: nesting deeper than MAX_SECTION_DEPTH, or an output estimated
 * over MAX_RENDERED_CHARS (a list section counts its body once per entry). The stack's load-time
 * check runs the same test on a stand-in context with the real replica counts (65, naming its line).
 */

import { lineIndex } from '../../util/line-index.js';

/** Sections inside sections, at most; real configs use two or three. */
export const MAX_SECTION_DEPTH = 16;
/** Largest rendered config file, in characters (16 Mi). */
export const MAX_RENDERED_CHARS = 16 * 1024 * 1024;

/** mustache's parsed token: [type, value, start, end, children?, …]. */
export type Span = [string, string, number, number, Span[]?, number?];

/** How the renderer looks names up and what a section pushes: templates.ts's own rules. */
export interface ViewRules {
  lookup(stack: readonly unknown[], name: string): { hit: boolean; value?: unknown };
  sectionView(value: unknown): unknown;
}

// One look-up per message (each ends the check), so the index is built for it alone.
const lineAt = (text: string, offset: number): number => lineIndex(text)(offset);

/** The first section that opens deeper than MAX_SECTION_DEPTH (walked without recursion). */
function tooDeep(spans: readonly Span[]): Span | undefined {
  const todo: [readonly Span[], number][] = [[spans, 1]];
  while (todo.length > 0) {
    const [list, depth] = todo.pop()!;
    for (const s of list) {
      if ((s[0] !== '#' && s[0] !== '^') || !Array.isArray(s[4])) continue;
      if (depth > MAX_SECTION_DEPTH) return s;
      todo.push([s[4], depth + 1]);
    }
  }
  return undefined;
}

const valueChars = (v: unknown): number => (v === null || v === undefined ? 0 : typeof v === 'object' ? 32 : String(v).length);

/**
 * Characters `spans` render to with `stack` (an upper estimate: every list entry is taken to
 * be like the merged view), and the outermost section that took it over the limit.
 */
function estimate(spans: readonly Span[], stack: unknown[], rules: ViewRules): { chars: number; at?: Span } {
  let chars = 0;
  for (const s of spans) {
    const [type, name, , , children] = s;
    if (type === 'text') chars += name.length;
    else if (type === 'name' || type === '&') chars += valueChars(rules.lookup(stack, name).value);
    else if ((type === '#' || type === '^') && Array.isArray(children)) {
      const found = rules.lookup(stack, name);
      const v = found.value;
      let inner: { chars: number; at?: Span };
      if (type === '^') inner = estimate(children, stack, rules);
      else if (Array.isArray(v)) {
        const body = v.length === 0 ? { chars: 0 } : estimate(children, [...stack, rules.sectionView(v)], rules);
        inner = { chars: body.chars * v.length, ...(body.at ? { at: body.at } : {}) };
      } else inner = v ? estimate(children, [...stack, v], rules) : { chars: 0 };
      if (inner.at) return { chars: Infinity, at: inner.at };
      chars += inner.chars;
    }
    if (chars > MAX_RENDERED_CHARS) return { chars, at: s };
  }
  return { chars };
}

/** "FILE:LINE: …" when rendering `spans` with `context` would pass a bound; undefined otherwise. */
export function templateBoundProblem(spans: readonly Span[], text: string, context: object, file: string, rules: ViewRules): string | undefined {
  const deep = tooDeep(spans);
  if (deep) {
    return `${file}:${lineAt(text, deep[2])}: template sections nest more than ${MAX_SECTION_DEPTH} deep here ({{${deep[0]}${deep[1]}}}); berth renders at ` +
      `most ${MAX_SECTION_DEPTH} levels (close the sections above it)`;
  }
  const e = estimate(spans, [context], rules);
  if (e.at) {
    const mib = MAX_RENDERED_CHARS / (1024 * 1024);
    return `${file}:${lineAt(text, e.at[2])}: this section ({{${e.at[0]}${e.at[1]}}}) would render more than ${mib} MiB (each list section repeats its body ` +
      `once per entry, nested lists multiply); berth renders at most ${mib} MiB per template`;
  }
  return undefined;
}
