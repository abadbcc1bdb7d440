// Minimal HTML/SVG string building. Every text and attribute value goes through esc(), so
// untrusted strings (owners' command lines, lease names, band names) cannot break out.
import { cleanText } from './format.js';

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

/** An element; children are markup already (use text() for strings). */
export function h(name: string, attrs: Attrs = {}, ...children: string[]): string {
  return `<${name}${attrText(attrs)}>${children.join('')}</${name}>`;
}

/** A void or self-closed element (<rect/>, <meta>). */
export function v(name: string, attrs: Attrs = {}): string {
  return name === 'meta' || name === 'br' ? `<${name}${attrText(attrs)}>` : `<${name}${attrText(attrs)}/>`;
}

export function text(s: string): string {
  return esc(s);
}

/** SVG hover text with the exact numbers; read by browsers without any script. */
export function title(s: string): string {
  return `<title>${esc(s)}</title>`;
}

/**
 * JSON safe inside <script type="application/json">: no "<" at all (so neither "</script"
 * nor "<!--" can appear), and U+2028/2029 escaped; JSON.parse gives back the same value.
 */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value, null, 1)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}
