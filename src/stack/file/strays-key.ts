import { isSeq } from 'yaml';
import type { Node } from 'yaml';
import type { StrayRule } from '../../launch/launch-api.js';
import { didYouMean } from '../../util/did-you-mean.js';
import { kindOf, scalarText } from '../../util/yaml-values.js';
import type { YamlReader } from './ports-key.js';

/*
 * A service's `strays:` key: listeners outside its ports that it cannot help opening (a
 * Jupyter kernel's ZMQ ports, bound to port 0 and so in the ephemeral range; a debug port a
 * program always opens). The listener audit still records them (events.jsonl, endpoints.json
 * with "acknowledged": true, diagnostics.json) but does not warn about them on every start.
 *   strays: ephemeral                # any inside the host's unreserved ephemeral range
 *   strays: all                      # any outside its ports
 *   strays: [ephemeral, 8265, 9000-9010]
 * Default: none acknowledged, every finding is warned about.
 */

const WORDS = ['ephemeral', 'all'] as const;
const EXAMPLE = 'strays: ephemeral, strays: all, or a list such as [ephemeral, 8265, 9000-9010]';

function rule(text: string): StrayRule | string {
  if (text === 'ephemeral' || text === 'all') return { kind: text };
  const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(text);
  if (!m) return `"${text}" is not ephemeral, all, a port or a range LO-HI${didYouMean(text, WORDS)}`;
  const lo = Number(m[1]);
  const hi = m[2] === undefined ? lo : Number(m[2]);
  if (lo < 1 || hi > 65535 || lo > hi) return `"${text}" is not a port (1-65535) or a range LO-HI with LO <= HI`;
  return { kind: 'ports', lo, hi };
}

/** The rules, or undefined when the key is broken (every problem reported). */
export function readStraysKey(v: Node | null | undefined, line: number, label: string, y: YamlReader): StrayRule[] | undefined {
  const items = v && isSeq(v) ? v.items.map((it) => y.deref(it as Node, line, label)) : [v];
  if (v && isSeq(v) && v.items.length === 0) {
    y.add(y.lineOf(v, line), `${label}: strays must be ${EXAMPLE}, found an empty list`);
    return undefined;
  }
  const out: StrayRule[] = [];
  let broken = false;
  for (const it of items) {
    const text = scalarText(it)?.trim();
    const r = text === undefined ? `found ${kindOf(it)}` : rule(text);
    if (typeof r === 'string') {
      y.add(y.lineOf(it, line), `${label}: strays: ${r}; write ${EXAMPLE}`);
      broken = true;
    } else out.push(r);
  }
  return broken ? undefined : out;
}
