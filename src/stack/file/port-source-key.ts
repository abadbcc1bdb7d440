import type { Node } from 'yaml';
import type { PortEntry } from '../../allocate/port-set.js';
import type { PortRange } from '../../host/host-map.js';
import { DEFAULT_BAND } from '../../layout/default-layout.js';
import type { Layout } from '../../layout/layout-model.js';
import { parseRangeText } from '../../source/range-text.js';
import { didYouMean } from '../../util/did-you-mean.js';
import { kindOf, toUint } from '../../util/yaml-values.js';
import type { Draft } from './draft.js';
import { readPortsKey, type YamlReader } from './ports-key.js';

/*
 * A service's ports in the stack file: where they come from (`band:` with `instance:`,
 * `port:`, `range:`, or `port: none`; one of them) and their names (`ports:`, ports-key.ts).
 * The band is looked up in the layout here; sizes against windows and bands, and the
 * inferred sources of services that give none, are checked across services (stack-checks.ts).
 */

export type SourceKey = 'band' | 'port' | 'range' | 'instance' | 'ports';

/** One of a service's port keys, into its draft; `fail` reports at the value (`true`: the ports are broken). */
export function readSourceKey(
  key: SourceKey,
  v: Node | null | undefined,
  kLine: number,
  text: string | undefined,
  d: Draft,
  label: string,
  fail: (msg: string, portsBroken?: boolean) => void,
  r: YamlReader,
): void {
  const n = text === undefined ? undefined : toUint(text.trim());
  switch (key) {
    case 'band':
      if (text === undefined || text.trim() === '') fail(`band must be the name of a band of the layout, found ${kindOf(v)}`, true);
      else d.source = setSource(d, { kind: 'band', name: text.trim(), line: kLine }, label, r);
      break;
    case 'port':
      if (text?.trim() === 'learn') {
        // One port the service chooses: as `ports: { port: learn }`, its one entry named "port".
        if (d.portsLine !== undefined) fail('port: learn and ports: both name the ports; write NAME: learn inside ports: instead', true);
        else {
          d.learnLine = kLine;
          d.spec.ports = [{ name: 'port', kind: 'learn' }];
        }
        break;
      }
      if (text?.trim() === 'none') {
        d.source = setSource(d, { kind: 'none', line: kLine }, label, r);
        break;
      }
      if (n === undefined || n < 1 || n > 65535) fail(`port must be a TCP port 1-65535, "learn" (one the service chooses) or "none", found ${kindOf(v)}`, true);
      else d.source = setSource(d, { kind: 'port', port: n, line: kLine }, label, r);
      break;
    case 'ports': {
      if (d.learnLine !== undefined) {
        fail(`ports: and port: learn (line ${d.learnLine}) both name the ports; write NAME: learn inside ports: instead`, true);
        break;
      }
      d.portsLine = kLine;
      d.spec.portsDeclared = true;
      const entries = readPortsKey(v, kLine, label, r);
      if (entries) {
        d.spec.ports = entries.filter((e) => e.kind !== 'shared');
        d.spec.sharedKept = entries.flatMap((e) => (e.kind === 'shared' && e.keep ? [e.name] : []));
        d.spec.shared = entries.flatMap((e): PortEntry[] =>
          e.kind !== 'shared' ? [] : e.count === 1 ? [{ name: e.name, kind: 'single' }] : [{ name: e.name, kind: 'block', count: e.count }],
        );
      } else d.portsBroken = d.broken = true;
      break;
    }
    case 'range': {
      const range = text === undefined ? undefined : portRange(text);
      if (!range) fail(`range must be LO-HI with 1 ≤ LO ≤ HI ≤ 65535 (e.g. 20000-20099), found ${kindOf(v)}`, true);
      else d.source = setSource(d, { kind: 'range', range, line: kLine }, label, r);
      break;
    }
    case 'instance':
      if (n === undefined) fail(`instance must be a whole number ≥ 0, found ${kindOf(v)}`, true);
      else d.instance = { n, line: kLine };
      break;
  }
}

function setSource(d: Draft, s: NonNullable<Draft['source']>, label: string, r: YamlReader): Draft['source'] {
  if (d.source) {
    const was = d.source.kind === 'none' ? 'port: none' : d.source.kind;
    r.add(s.line, `${label}: give one of band, port or range (${was} is already given at line ${d.source.line})`);
    d.broken = true;
    return d.source;
  }
  return s;
}

/** Band lookup and window checks need the layout; everything else is checked across services. */
export function resolvePorts(d: Draft, layout: Layout | undefined, layoutBroken: boolean, label: string, r: YamlReader): void {
  const s = d.source;
  if (!s) return; // inferred by the stack checks, once templates are known
  if (s.kind === 'none') d.spec.source = { kind: 'none' };
  else if (s.kind === 'port') d.spec.source = { kind: 'port', port: s.port };
  else if (s.kind === 'range') d.spec.source = { kind: 'range', range: s.range };
  else {
    const band = layout?.bands.find((b) => b.name === s.name);
    if (!band) {
      // "default" without a layout band of that name is the built-in one, as for services without a source.
      if (s.name === DEFAULT_BAND) {
        d.spec.source = { kind: 'default' };
        if (d.instance && d.instance.n > 0)
          r.add(d.instance.line, `${label}: instance ${d.instance.n} needs a band with a window; the built-in band "default" is one instance (0)`);
        return;
      }
      if (layoutBroken) return;
      d.broken = true;
      const names = layout ? layout.bands.map((b) => b.name) : [DEFAULT_BAND];
      const where = layout ? `the layout (${layout.source})` : 'the built-in layout; add "layout: FILE" or inline "bands:"';
      r.add(s.line, `${label}: band "${s.name}" is not in ${where}${didYouMean(s.name, names)}; bands: ${names.join(', ') || 'none'}`);
      return;
    }
    const instance = d.instance?.n ?? 0;
    d.spec.source = { kind: 'band', band, instance };
    if (band.window === undefined && instance > 0) {
      r.add(d.instance!.line, `${label}: instance ${instance} needs band "${band.name}" to have a window; a band without "window:" is one instance (0)`);
      d.broken = true;
    }
  }
}

function portRange(text: string): PortRange | undefined {
  const r = parseRangeText(text);
  return r && r.lo >= 1 && r.hi <= 65535 && r.lo <= r.hi ? r : undefined;
}
