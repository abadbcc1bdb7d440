import { formatRange, rangeSize } from '../../host/intervals.js';
import { DEFAULT_BAND } from '../../layout/default-layout.js';
import type { Layout } from '../../layout/layout-model.js';
import { didYouMean } from '../../util/did-you-mean.js';
import type { Draft, StackDrafts } from './draft.js';
import { findCycles } from './graph.js';
import { checkNodes } from './nodes-key.js';
import { declaresPort, markOneShots } from './one-shot.js';
import { checkPlaceholders } from './placeholder-check.js';
import { checkPortOverlaps } from './port-overlap-check.js';
import { portsNeeded } from './ports-key.js';
import { templateFileProblems } from './template-check.js';

/*
 * The table of checks that need every service at once (each service is read alone,
 * services-key.ts), run in order: a check may rely on what the ones before it settled
 * (every service's port source is known before its set is sized and its placeholders read).
 */

/** The stack as read, for its checks. */
interface StackRead extends StackDrafts {
  readonly layout: Layout | undefined;
  add(line: number, text: string): void;
}

type StackCheck = (stack: StackRead) => void;

const STACK_CHECKS: readonly StackCheck[] = [
  /** A service that names no source: none for a job or a one-shot step that declares no port, else the default band. */
  function portSources({ drafts, layout }) {
    const noPort = markOneShots(drafts);
    const band = layout?.bands.find((b) => b.name === DEFAULT_BAND);
    for (const draft of drafts) {
      if (draft.source) continue;
      if ((draft.spec.job || noPort.has(draft.spec.name)) && !declaresPort(draft)) draft.spec.source = { kind: 'none' };
      else draft.spec.source = band ? { kind: 'band', band, instance: 0 } : { kind: 'default' };
    }
  },
  function portSets({ drafts, add }) {
    for (const draft of drafts) checkPortSet(draft, add);
  },
  function dependencies({ drafts, byName, names, add }) {
    for (const draft of drafts) {
      const label = `service "${draft.spec.name}"`;
      for (const dep of draft.spec.dependsOn) {
        const target = byName.get(dep.service);
        if (dep.service === draft.spec.name) add(dep.line, `${label}: depends on itself; remove "${dep.service}" from its depends_on`);
        else if (!target) {
          const known = `${didYouMean(dep.service, names)}; services: ${names.join(', ')}`;
          add(dep.line, `${label}: depends on "${dep.service}", which is not a service of this stack${known}`);
        } else if (dep.condition === 'completed' && target.spec.job) {
          add(dep.line, `${label}: depends on "${dep.service}" completing, but "${dep.service}" is the job: the stack ends when it exits`);
        }
      }
    }
  },
  function cycles({ drafts, byName, add }) {
    const nodes = drafts.map((draft) => ({ name: draft.spec.name, dependsOn: draft.spec.dependsOn.filter((x) => x.service !== draft.spec.name) }));
    for (const cycle of findCycles(nodes)) {
      const from = byName.get(cycle[0]!)!;
      const line = from.spec.dependsOn.find((x) => x.service === cycle[1])?.line ?? from.spec.line;
      add(line, `service "${cycle[0]}": dependency cycle ${cycle.join(' → ')}; remove one of these depends_on entries`);
    }
  },
  /** What each replica's text names, in placeholders and config templates alike, by one set of rules (reference-rules.ts). */
  function references(stack) {
    for (const draft of stack.drafts) checkPlaceholders(draft, stack, stack.add);
    for (const draft of stack.drafts) if (!draft.broken) for (const [line, text] of templateFileProblems(draft, stack)) stack.add(line, text);
  },
  function portOverlaps({ drafts, add }) {
    checkPortOverlaps(drafts, add);
  },
  function oneJob({ drafts, add }) {
    let first: Draft | undefined;
    for (const draft of drafts) {
      if (!draft.spec.job) continue;
      if (first) add(draft.jobLine, `service "${draft.spec.name}": only one service may be the job; "${first.spec.name}" (line ${first.jobLine}) already is`);
      else first = draft;
    }
  },
  function nodesCoverDependencies({ drafts, add }) {
    checkNodes(drafts.map((d) => d.spec), add);
  },
];

/** Runs every check across the services, reporting each problem through `add`. */
export function checkStack(drafts: readonly Draft[], layout: Layout | undefined, add: (line: number, text: string) => void): void {
  const stack: StackRead = { drafts, byName: new Map(drafts.map((d) => [d.spec.name, d])), names: drafts.map((d) => d.spec.name), layout, add };
  for (const check of STACK_CHECKS) check(stack);
}

/** `ports:` against where the ports come from (once every source is known): sizes, windows, a fixed port. */
function checkPortSet(draft: Draft, add: (line: number, text: string) => void): void {
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
    const where = band ? `band "${band.name}" has no window` : src.kind === 'range' ? "a range is no one's window" : 'the built-in default band has no window';
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
