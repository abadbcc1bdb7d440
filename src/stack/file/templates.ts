import { basename, join } from 'node:path';
import Mustache from 'mustache';
import { BerthError, EXIT } from '../../errors.js';
import { writeFileAtomic, type FileOwner } from '../../util/atomic-write.js';
import { lineIndex } from '../../util/line-index.js';
import { readInputFile } from '../../util/safe-file.js';
import { didYouMean } from '../../util/did-you-mean.js';
import { readReason } from '../../util/yaml-source.js';
import { templateBoundProblem, type Span } from './template-bounds.js';

/*
 * Config files rendered from templates (nginx, haproxy, Prometheus …) with mustache: logic-
 * less, {{name}} tags, {{#list}}…{{/list}} loops, and nothing else of the file touched, so
 * nginx's and haproxy's own { } blocks pass through. No HTML escaping: these are config files.
 * mustache renders an unknown name as "", which in a config file is a silent wrong value, so
 * every tag is checked against the context first, the way mustache would look it up.
 * A file that needs {{ }} itself (Go templates in Prometheus rules) switches delimiters on
 * its first line: {{=<% %>=}}.
 */

export interface RenderOptions {
  /** Delimiters other than {{ }} from the start of the file. */
  tags?: [string, string];
  /** First segments ({{etcd.port}}: the services) a tag inside a list section may take from outside its entry; any other is an error. */
  outerNames?: readonly string[];
}

export interface RenderedTemplate {
  source: string;
  path: string;
  bytes: number;
}

interface Problem {
  line: number;
  text: string;
}

/** Offset → line of the template being checked (util/line-index.ts: linear in all, not per tag). */
type LineOf = (offset: number) => number;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** mustache's lookup: the whole dotted name in the innermost view that has it, then outwards (`at`: that view). */
function lookup(stack: readonly unknown[], name: string): { hit: boolean; value?: unknown; at?: number } {
  if (name === '.') return { hit: true, value: stack[stack.length - 1], at: stack.length - 1 };
  const names = name.split('.');
  for (let i = stack.length - 1; i >= 0; i--) {
    let v: unknown = stack[i];
    let hit = false;
    for (let k = 0; k < names.length && v !== null && v !== undefined; k++) {
      const key = names[k]!;
      if (k === names.length - 1) hit = isObject(v) ? key in v : Object.prototype.hasOwnProperty.call(v, key);
      v = (v as Record<string, unknown>)[key];
    }
    if (hit) return { hit, value: v, at: i };
  }
  return { hit: false };
}

/** Every name reachable from the views of the stack, for "known here: …" and "did you mean". */
function knownNames(stack: readonly unknown[]): string[] {
  const out = new Set<string>();
  const walk = (v: unknown, prefix: string, depth: number) => {
    if (!isObject(v) || Array.isArray(v) || depth > 3) return;
    for (const [k, x] of Object.entries(v)) {
      out.add(prefix + k);
      walk(x, `${prefix}${k}.`, depth + 1);
    }
  };
  for (const view of stack) walk(view, '', 0);
  return [...out];
}

/** The view a section pushes for its body: a list's element (they are alike), else the value. */
function sectionView(value: unknown): unknown {
  if (Array.isArray(value)) return value.reduce((a: Record<string, unknown>, x) => (isObject(x) ? { ...a, ...x } : a), {});
  return value;
}

/** The innermost list section around a tag: its view's place in the stack and its name. */
interface Entry {
  at: number;
  section: string;
}

function checkSpans(spans: readonly Span[], stack: unknown[], lineOf: LineOf, problems: Problem[], outer: ReadonlySet<string>, entry?: Entry): void {
  for (const [type, name, start, , children] of spans) {
    const line = lineOf(start);
    if (type === '>') {
      problems.push({ line, text: `{{> ${name}}}: partials are not supported; write the text into this file` });
      continue;
    }
    if (type !== 'name' && type !== '&' && type !== '#' && type !== '^') continue;
    const found = lookup(stack, name);
    if (!found.hit) {
      const hint = didYouMean(name, knownNames(stack), { anyLength: true });
      // The innermost view with names ({{#last}} pushes a boolean).
      let at = stack.length - 1;
      while (at > 0 && !(isObject(stack[at]) && !Array.isArray(stack[at]))) at--;
      const here = knownNames(stack.slice(at, at + 1)).filter((k) => !k.includes('.'));
      const where = at > 0 ? 'inside this section' : 'at the top level';
      problems.push({ line, text: `unknown template tag {{${type === 'name' ? '' : type}${name}}}${hint}; names ${where}: ${here.join(', ')}` });
    } else if (entry && found.at! < entry.at && !outer.has(name.split('.')[0]!)) {
      // mustache would take it from outside the entry (this replica's own {{node}} for every
      // replica of the list): a silent wrong value, so it is refused.
      const fields = knownNames([stack[entry.at]]).filter((k) => !k.includes('.'));
      problems.push({
        line,
        text: `{{${type === 'name' ? '' : type}${name}}} inside {{#${entry.section}}} is not a field of its entries, so mustache would give the ` +
          `${name} of the outer context (the same for every entry); an entry has: ${fields.join(', ')}. Write it outside the section if the outer value is ` +
            `meant`,
      });
    }
    if ((type === '#' || type === '^') && children) {
      const inner = type === '#' && found.hit ? [...stack, sectionView(found.value)] : stack;
      const isList = type === '#' && Array.isArray(found.value);
      checkSpans(children as Span[], inner, lineOf, problems, outer, isList ? { at: inner.length - 1, section: name } : entry);
    }
  }
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * "Unclosed tag at 120" → the line of offset 120. mustache reports an unclosed section at the
 * end of the file; the line that opened it is the useful one (its last opener).
 */
function syntaxProblem(err: Error, text: string, tags: [string, string]): Problem {
  const lineOf = lineIndex(text);
  const m = / at (\d+)$/.exec(err.message);
  const line = m ? lineOf(Number(m[1])) : 1;
  const message = err.message.replace(/ at \d+$/, '');
  const unclosed = /^Unclosed section "(.*)"$/.exec(message);
  if (unclosed) {
    const opener = new RegExp(`${escapeRe(tags[0])}\\s*[#^]\\s*${escapeRe(unclosed[1]!)}\\s*${escapeRe(tags[1])}`, 'g');
    let last: RegExpExecArray | null = null;
    for (let o = opener.exec(text); o; o = opener.exec(text)) last = o;
    if (last) return { line: lineOf(last.index), text: `template syntax error: section "${unclosed[1]}" opened here is never closed` };
  }
  if (message === 'Unclosed tag') {
    // The first opener after the last closer is the one never closed.
    const close = text.lastIndexOf(tags[1]);
    const open = text.indexOf(tags[0], close < 0 ? 0 : close + tags[1].length);
    if (open >= 0) return { line: lineOf(open), text: `template syntax error: the tag opened here with ${tags[0]} is never closed with ${tags[1]}` };
  }
  return { line, text: `template syntax error: ${message}` };
}

/**
 * The problems of a template against a context (syntax, unknown tags, partials), each
 * "FILE:LINE: …"; [] when it renders as written. `file` only names it in messages.
 */
export function templateProblems(text: string, context: object, file: string, opts: RenderOptions = {}): string[] {
  let spans: Span[];
  try {
    spans = Mustache.parse(text, opts.tags) as unknown as Span[];
  } catch (e) {
    const p = syntaxProblem(e as Error, text, opts.tags ?? ['{{', '}}']);
    return [`${file}:${p.line}: ${p.text}`];
  }
  const bound = templateBoundProblem(spans, text, context, file, { lookup, sectionView });
  if (bound !== undefined) return [bound];
  const problems: Problem[] = [];
  checkSpans(spans, [context], lineIndex(text), problems, new Set(opts.outerNames ?? []));
  return problems.sort((a, b) => a.line - b.line).map((p) => `${file}:${p.line}: ${p.text}`);
}

export interface TagName {
  /** The first segment of its name. */
  name: string;
  line: number;
  /** The whole tag, with its sigil ("#engine.replicas"). */
  full: string;
  /** The innermost section it is inside ("engine.replicas"), where a name may be the section's entry's rather than the replica's own. */
  section?: string;
}

/**
 * Every tag, sections' bodies included, so the load-time check can require every service named
 * there to be a dependency, as it does for {svc.url}. A syntax error gives []: templateProblems reports it.
 */
export function templateTagNames(text: string, opts: RenderOptions = {}): TagName[] {
  let spans: Span[];
  try {
    spans = Mustache.parse(text, opts.tags) as unknown as Span[];
  } catch {
    return [];
  }
  const out: TagName[] = [];
  const lineOf = lineIndex(text);
  const walk = (list: readonly Span[], section: string | undefined) => {
    for (const [type, name, start, , children] of list) {
      if (type === 'name' || type === '&' || type === '#' || type === '^') {
        const tag: TagName = { name: name.split('.')[0]!, line: lineOf(start), full: `${type === 'name' ? '' : type}${name}` };
        out.push(section === undefined ? tag : { ...tag, section });
      }
      if ((type === '#' || type === '^') && Array.isArray(children)) walk(children, name);
    }
  };
  walk(spans, undefined);
  return out;
}

/** Renders template text; throws BerthError(DATAERR) listing every problem as "FILE:LINE: …". */
export function renderTemplateText(text: string, context: object, file: string, opts: RenderOptions = {}): string {
  const problems = templateProblems(text, context, file, opts);
  if (problems.length > 0) throw new BerthError(EXIT.DATAERR, problems.join('\n'), { file, errors: problems });
  return Mustache.render(text, context, {}, { escape: String, ...(opts.tags ? { tags: opts.tags } : {}) });
}

/** The rendered file's name: the template's, without a trailing ".mustache" or ".tmpl". */
export function renderedName(file: string): string {
  const b = basename(file);
  const stripped = b.replace(/\.(mustache|tmpl)$/, '');
  return stripped === '' ? b : stripped;
}

/**
 * Renders a template file atomically into `outDir` (as `name`, default renderedName(file)). An unreadable
 * template or an unknown tag is a DATAERR (65) naming the file; a failed write an IOERR (74).
 */
export function renderTemplateFile(
  file: string,
  context: object,
  outDir: string,
  opts: RenderOptions & { name?: string; owner?: FileOwner } = {},
): RenderedTemplate {
  let text: string;
  try {
    text = readInputFile(file);
  } catch (e) {
    throw new BerthError(EXIT.DATAERR, `template ${file}: cannot read it: ${readReason(e)}`, { file });
  }
  const rendered = renderTemplateText(text, context, file, opts);
  const path = join(outDir, opts.name ?? renderedName(file));
  try {
    // For a dir_owner: the file is that user's, in that user's directory (atomic-write.ts).
    writeFileAtomic(path, rendered, 0o644, opts.owner);
  } catch (e) {
    throw new BerthError(EXIT.IOERR, `template ${file}: cannot write ${path}: ${readReason(e)}`, { file, path });
  }
  return { source: file, path, bytes: Buffer.byteLength(rendered) };
}
