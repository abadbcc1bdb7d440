import type { Node } from 'yaml';
import type { PortEntry } from '../../allocate/port-set.js';
import type { PortRange } from '../../host/types.js';
import { DEFAULT_BAND } from '../../layout/default-layout.js';
import type { Layout } from '../../layout/types.js';
import { didYouMean } from '../../util/did-you-mean.js';
import { kindOf, toUint } from '../../util/yaml-values.js';
import type { Draft } from './draft.js';
import { readPortsKey, type YamlReader } from './ports-key.js';

/*
 * A service's ports in the stack file: where they come from (`band:` with `instance:`,
 * `port:`, `range:`, or `port: none`; one of them) and their names (`ports:`, ports-key.ts).
 * The band is looked up in the layout here; sizes against windows and bands, and the
 * inferred sources of services that give none, are checked across services (cross-check.ts).
 */

export type SourceKey = 'band' | 'port' | 'range' | 'instance' | 'ports';

/** One of a service's port keys, into its draft; `fail` reports at the value (`true`: the ports are broken). */
export function readSourceKey(
  key: SourceKey,
  v: Node | null | undefined,
  kLine: number,
  text: string | undefined,
  draft: Draft,
  label: string,
  fail: (msg: string, portsBroken?: boolean) => void,
  reader: YamlReader,
): void {
  switch (key) {
    case 'band':
      if (text === undefined || text.trim() === '') fail(`band must be the name of a band of the layout, found ${kindOf(v)}`, true);
      else draft.source = setSource(draft, { kind: 'band', name: text.trim(), line: kLine }, label, reader);
      break;
    case 'port': {
      if (text?.trim() === 'learn') {
        // One port the service chooses: as `ports: { port: learn }`, its one entry named "port".
        if (draft.portsLine !== undefined) fail('port: learn and ports: both name the ports; write NAME: learn inside ports: instead', true);
        else {
          draft.learnLine = kLine;
          draft.spec.ports = [{ name: 'port', kind: 'learn' }];
        }
        break;
      }
      if (text?.trim() === 'none') {
        draft.source = setSource(draft, { kind: 'none', line: kLine }, label, reader);
        break;
      }
      const n = text === undefined ? undefined : toUint(text.trim());
      if (n === undefined || n < 1 || n > 65535) fail(`port must be a TCP port 1-65535, "learn" (one the service chooses) or "none", found ${kindOf(v)}`, true);
      else draft.source = setSource(draft, { kind: 'port', port: n, line: kLine }, label, reader);
      break;
    }
    case 'ports': {
      if (draft.learnLine !== undefined) {
        fail(`ports: and port: learn (line ${draft.learnLine}) both name the ports; write NAME: learn inside ports: instead`, true);
        break;
      }
      draft.portsLine = kLine;
      draft.spec.portsDeclared = true;
      const entries = readPortsKey(v, kLine, label, reader);
      if (entries) {
        draft.spec.ports = entries.filter((e) => e.kind !== 'shared');
        draft.spec.sharedKept = entries.flatMap((e) => (e.kind === 'shared' && e.keep ? [e.name] : []));
        const sharedEntry = (e: PortEntry & { kind: 'shared' }): PortEntry =>
          e.count === 1 ? { name: e.name, kind: 'single' } : { name: e.name, kind: 'block', count: e.count };
        draft.spec.shared = entries.flatMap((e): PortEntry[] => (e.kind !== 'shared' ? [] : [sharedEntry(e)]));
      }
      else draft.portsBroken = draft.broken = true;
      break;
    }
    case 'range': {
      const range = text === undefined ? undefined : parseRangeText(text);
      if (!range) fail(`range must be LO-HI with 1 ≤ LO ≤ HI ≤ 65535 (e.g. 20000-20099), found ${kindOf(v)}`, true);
      else draft.source = setSource(draft, { kind: 'range', range, line: kLine }, label, reader);
      break;
    }
    case 'instance': {
      const n = text === undefined ? undefined : toUint(text.trim());
      if (n === undefined) fail(`instance must be a whole number ≥ 0, found ${kindOf(v)}`, true);
      else draft.instance = { n, line: kLine };
      break;
    }
  }
}

function setSource(draft: Draft, s: NonNullable<Draft['source']>, label: string, reader: YamlReader): Draft['source'] {
  if (draft.source) {
    const was = draft.source.kind === 'none' ? 'port: none' : draft.source.kind;
    reader.add(s.line, `${label}: give one of band, port or range (${was} is already given at line ${draft.source.line})`);
    draft.broken = true;
    return draft.source;
  }
  return s;
}


/** Band lookup and window checks need the layout; everything else is checked across services. */
export function resolvePorts(draft: Draft, layout: Layout | undefined, layoutBroken: boolean, label: string, reader: YamlReader): void {
  const s = draft.source;
  if (!s) return; // inferred in the cross check, once templates are known
  if (s.kind === 'none') draft.spec.source = { kind: 'none' };
  else if (s.kind === 'port') draft.spec.source = { kind: 'port', port: s.port };
  else if (s.kind === 'range') draft.spec.source = { kind: 'range', range: s.range };
  else {
    const band = layout?.bands.find((b) => b.name === s.name);
    if (!band) {
      // "default" without a layout band of that name is the built-in one, as for services without a source.
      if (s.name === DEFAULT_BAND) {
        draft.spec.source = { kind: 'default' };
        if (draft.instance && draft.instance.n > 0) {
          reader.add(draft.instance.line, `${label}: instance ${draft.instance.n} needs a band with a window; the built-in band "default" is one instance (0)`);
        }
        return;
      }
      if (layoutBroken) return;
      draft.broken = true;
      const names = layout ? layout.bands.map((b) => b.name) : [DEFAULT_BAND];
      const where = layout ? `the layout (${layout.source})` : 'the built-in layout; add "layout: FILE" or inline "bands:"';
      reader.add(s.line, `${label}: band "${s.name}" is not in ${where}${didYouMean(s.name, names)}; bands: ${names.join(', ') || 'none'}`);
      return;
    }
    const instance = draft.instance?.n ?? 0;
    draft.spec.source = { kind: 'band', band, instance };
    if (band.window === undefined && instance > 0) {
      const why = 'a band without "window:" is one instance (0)';
      reader.add(draft.instance!.line, `${label}: instance ${instance} needs band "${band.name}" to have a window; ${why}`);
      draft.broken = true;
    }
  }
}

function parseRangeText(text: string): PortRange | undefined {
  const t = text.trim();
  const dash = t.indexOf('-');
  if (dash < 0) return undefined;
  const lo = toUint(t.slice(0, dash).trim());
  const hi = toUint(t.slice(dash + 1).trim());
  if (lo === undefined || hi === undefined || lo < 1 || hi > 65535 || lo > hi) return undefined;
  return { lo, hi };
}
