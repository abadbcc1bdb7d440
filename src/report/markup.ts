// Minimal HTML/SVG string building. Every text and attribute value goes through esc(), so
// untrusted strings (owners' command lines, lease names, band names) cannot break out.
import { cleanText } from '../util/clean-text.js';

/** Escape for element text and double- or single-quoted attribute values. */
export function esc(s: string): string {
  return cleanText(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Coordinates with at most two decimals: smaller files, stable snapshots. */
export function num(n: number): string {
  const r = Math.round(n * 100) / 100;
  return Object.is(r, -0) ? '0' : String(r);
}

export type Attrs = Record<string, string | number | boolean | undefined>;

function attrText(attrs: Attrs): string {
  let out = '';
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (v === true) out += ` ${k}`;
    else out += ` ${k}="${typeof v === 'number' ? num(v) : esc(v)}"`;
  }
  return out;
}

/** An element; children are markup already (esc() strings first). */
export function h(name: string, attrs: Attrs = {}, ...children: string[]): string {
  return `<${name}${attrText(attrs)}>${children.join('')}</${name}>`;
}

/** A void or self-closed element (<rect/>, <meta>). */
export function v(name: string, attrs: Attrs = {}): string {
  return name === 'meta' || name === 'br' ? `<${name}${attrText(attrs)}>` : `<${name}${attrText(attrs)}/>`;
}

/** SVG hover text with the exact numbers; read by browsers without any script. Keeps line breaks. */
export function title(s: string): string {
  return `<title>${s.split('\n').map(esc).join('\n')}</title>`;
}

/** JSON safe inside <script type="application/json">: no "<" (so no "</script" or "<!--"); JSON.parse gives the same value. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value, null, 1)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    // Line separators and bidi controls: harmless to JSON.parse, but not in view-source.
    .replace(/[\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}
