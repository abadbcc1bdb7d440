import { formatRange, rangeSize } from '../../host/intervals.js';
import type { Draft } from './draft.js';
import { portsNeeded } from './ports-key.js';

/*
 * One service's `ports:` against where its ports come from (stack-checks.ts runs it once
 * every source is known): the set's size against a fixed port, a band window, a band or a
 * range, and { block: window } against a source with no window.
 */

/** `ports:` against where the ports come from: sizes, windows, a fixed port. */
export function checkPortSet(draft: Draft, add: (line: number, text: string) => void): void {
  const spec = draft.spec;
  const src = spec.source;
  if (src.kind === 'none') {
    if (spec.portsDeclared) add(draft.portsLine!, `service "${spec.name}": "ports:" and "port: none" contradict each other; remove one`);
    spec.ports = [];
    return;
  }
  if (!spec.portsDeclared || draft.portsBroken) return;
  const say = (text: string) => {
    draft.broken = true;
    add(draft.portsLine!, `service "${spec.name}": ports: ${text}`);
  };
  // A shared port comes from replica 0's window or share: count it for every replica.
  const need = portsNeeded(spec.ports) + portsNeeded(spec.shared);
  const windows = spec.ports.filter((e) => e.kind === 'window');
  const one = spec.ports.length === 1;
  const atLeast = windows.length > 0 ? ` (with at least 1 for "${windows[0]!.name}")` : '';
  const desc = `${one ? 'its port' : `its ${spec.ports.length} entries`} need${one ? 's' : ''} ${need} port${need === 1 ? '' : 's'}${atLeast}`;
  if (windows.length > 1) return say(`${windows.map((w) => `"${w.name}"`).join(' and ')} are both { block: window }; a replica has one window`);
  if (src.kind === 'port') {
    if (need > 1 || windows.length > 0) say(`"port: ${src.port}" is one port, but ${desc}; use band: NAME or range: LO-HI`);
    return;
  }
  const band = src.kind === 'band' ? src.band : undefined;
  if (windows.length > 0 && band?.window === undefined) {
    let where = 'the built-in default band has no window';
    if (band) where = `band "${band.name}" has no window`;
    else if (src.kind === 'range') where = "a range is no one's window";
    return say(`"${windows[0]!.name}" is { block: window }, the replica's band window, but ${where}; use a band with "window:" or { block: N }`);
  }
  if (band?.window !== undefined) {
    const ownWindow = `its window of band "${band.name}" (${band.window} ports)`;
    if (need > band.window) say(`each replica takes its ports from ${ownWindow}, but ${desc}; widen the window or shrink the set`);
    return;
  }
  // A band without windows or a range: every replica's set is placed anywhere in it.
  const range = band ?? (src.kind === 'range' ? src.range : undefined);
  if (!range) return; // the built-in band's size is known only on the host
  const n = typeof spec.replicas === 'number' ? spec.replicas : 1;
  const size = rangeSize(range);
  if (need * n > size) {
    const what = band ? `band "${band.name}" (${formatRange(band)})` : `range ${formatRange(range)}`;
    say(`${n === 1 ? '' : `${n} replicas × `}${need} ports do not fit ${what}, which has ${size}; widen it or shrink the set`);
  }
}
