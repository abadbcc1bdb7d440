/*
 * The yaml parser recurses per level: ~1000 levels exhaust the stack, after which V8 may abort on a
 * later parse ("RegExpCompiler Allocation failed"). Such text is refused unparsed; the limits are far
 * beyond any layout or stack.
 */
const MAX_FLOW_DEPTH = 100;
const MAX_INDENT = 200;

/** Where the text nests deeper than the parser can safely go, and how; undefined when it does not. */
export function tooDeep(text: string): { line: number; what: string } | undefined {
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
