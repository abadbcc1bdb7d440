import { formatRange, rangeSize } from '../../host/intervals.js';
import type { PortRange } from '../../host/host-map.js';
import { DEFAULT_BAND } from '../../layout/default-layout.js';
import type { Band, Layout } from '../../layout/layout-model.js';
import { instanceCount } from '../../layout/windows.js';
import { didYouMean } from '../../util/did-you-mean.js';
import { findCycles } from './graph.js';
import { declaresPort, markOneShots } from './one-shot.js';
import type { Draft } from './draft.js';
import { checkPlaceholders, type StackDrafts } from './placeholder-check.js';
import { portsNeeded } from './ports-key.js';
import { templateFileProblems } from './template-check.js';

/*
 * Checks of a stack that need every service at once (the loader reads each service alone):
 * which services get a port, dependencies and cycles, placeholders, overlapping ports, the job.
 */

function describeBand(b: Band): string {
  return `band "${b.name}" (${formatRange(b)}${b.window === undefined ? '' : `, window ${b.window}`})`;
}

interface Claim {
  service: string;
  line: number;
  range: PortRange;
  what: string;
  /** A band without windows is shared by design; it conflicts only with fixed ports/ranges. */
  fixed: boolean;
}

/** Checks that need every service: dependencies, cycles, placeholders, ports, the job. */
export class CrossCheck {
  private readonly byName: Map<string, Draft>;
  private readonly names: string[];
  private readonly stack: StackDrafts;

  constructor(
    private readonly report: (line: number, text: string) => void,
    private readonly drafts: Draft[],
    private readonly layout: Layout | undefined,
  ) {
    this.byName = new Map(drafts.map((draft) => [draft.spec.name, draft]));
    this.names = drafts.map((draft) => draft.spec.name);
    this.stack = { drafts, byName: this.byName, names: this.names };
  }

  private add(line: number, text: string): void {
    this.report(line, text);
  }

  run(): void {
    const noPort = markOneShots(this.drafts);
    for (const draft of this.drafts) this.inferPorts(draft, noPort.has(draft.spec.name));
    for (const draft of this.drafts) this.portSet(draft);
    for (const draft of this.drafts) this.dependencies(draft);
    this.cycles();
    for (const draft of this.drafts) checkPlaceholders(draft, this.stack, (line, text) => this.add(line, text));
    const specs = new Map(this.drafts.map((draft) => [draft.spec.name, draft.spec]));
    for (const draft of this.drafts) if (!draft.broken) for (const [line, text] of templateFileProblems(draft.spec, specs)) this.add(line, text);
    this.ports();
    this.jobs();
  }

  private inferPorts(draft: Draft, oneShotNoPort: boolean): void {
    if (draft.source) return;
    if ((draft.spec.job || oneShotNoPort) && !declaresPort(draft)) {
      draft.spec.source = { kind: 'none' };
      return;
    }
    const band = this.layout?.bands.find((b) => b.name === DEFAULT_BAND);
    draft.spec.source = band ? { kind: 'band', band, instance: 0 } : { kind: 'default' };
  }

  /** `ports:` against where the ports come from: sizes, windows, a fixed port. */
  private portSet(draft: Draft): void {
    const spec = draft.spec;
    const src = spec.source;
    if (src.kind === 'none') {
      if (spec.portsDeclared) this.add(draft.portsLine!, `service "${spec.name}": "ports:" and "port: none" contradict each other; remove one`);
      spec.ports = [];
      return;
    }
    if (!spec.portsDeclared || draft.portsBroken) return;
    const say = (text: string) => {
      draft.broken = true;
      this.add(draft.portsLine!, `service "${spec.name}": ports: ${text}`);
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

  private dependencies(draft: Draft): void {
    const label = `service "${draft.spec.name}"`;
    for (const dep of draft.spec.dependsOn) {
      if (dep.service === draft.spec.name) {
        this.add(dep.line, `${label}: depends on itself; remove "${dep.service}" from its depends_on`);
        continue;
      }
      const target = this.byName.get(dep.service);
      if (!target) {
        const known = `${didYouMean(dep.service, this.names)}; services: ${this.names.join(', ')}`;
        this.add(dep.line, `${label}: depends on "${dep.service}", which is not a service of this stack${known}`);
        continue;
      }
      if (dep.condition === 'completed' && target.spec.job) {
        this.add(dep.line, `${label}: depends on "${dep.service}" completing, but "${dep.service}" is the job: the stack ends when it exits`);
      }
    }
  }

  private cycles(): void {
    const nodes = this.drafts.map((draft) => ({ name: draft.spec.name, dependsOn: draft.spec.dependsOn.filter((x) => x.service !== draft.spec.name) }));
    for (const cycle of findCycles(nodes)) {
      const from = this.byName.get(cycle[0]!)!;
      const line = from.spec.dependsOn.find((x) => x.service === cycle[1])?.line ?? from.spec.line;
      this.add(line, `service "${cycle[0]}": dependency cycle ${cycle.join(' → ')}; remove one of these depends_on entries`);
    }
  }

  private ports(): void {
    const claims: Claim[] = [];
    for (const draft of this.drafts) {
      if (draft.broken) continue;
      const label = `service "${draft.spec.name}"`;
      const ports = draft.spec.source;
      const line = draft.source?.line ?? draft.spec.line;
      const n = draft.spec.replicas;
      if (ports.kind === 'port') {
        if (n === 'gpus' || n > 1) {
          const replicas = n === 'gpus' ? '"gpus"' : n;
          const fix = 'use range: LO-HI or a band with a window';
          this.add(draft.replicasLine, `${label}: replicas ${replicas} with the fixed port ${ports.port}: every replica would need port ${ports.port}; ${fix}`);
          continue;
        }
        claims.push({ service: draft.spec.name, line, range: { lo: ports.port, hi: ports.port }, what: `port ${ports.port}`, fixed: true });
      } else if (ports.kind === 'range') {
        claims.push({ service: draft.spec.name, line, range: ports.range, what: `range ${formatRange(ports.range)}`, fixed: true });
      } else if (ports.kind === 'band') {
        const band = ports.band;
        if (band.window === undefined) {
          claims.push({ service: draft.spec.name, line, range: { lo: band.lo, hi: band.hi }, what: describeBand(band), fixed: false });
          continue;
        }
        if (n === 'gpus') continue; // the window count is known only under Slurm
        const count = instanceCount(band);
        const lastNeeded = ports.instance + n - 1;
        if (lastNeeded >= count) {
          const who =
            n === 1
              ? `instance ${ports.instance} needs window ${ports.instance}`
              : `replicas ${n} from instance ${ports.instance} need windows ${ports.instance}-${lastNeeded}`;
          const at = draft.replicasLine === draft.spec.line ? line : draft.replicasLine;
          const fix = 'widen the band, use a smaller window, or lower replicas';
          this.add(at, `${label}: ${who} of ${describeBand(band)}, which has ${count} (0-${count - 1}); ${fix}`);
          continue;
        }
        for (let r = 0; r < n; r++) {
          const w = ports.instance + r;
          const lo = band.lo + w * band.window;
          const win = `window ${w} of band "${band.name}" (${formatRange({ lo, hi: lo + band.window - 1 })})`;
          const what = n === 1 ? win : `replica ${r}'s ${win}`;
          claims.push({ service: draft.spec.name, line, range: { lo, hi: lo + band.window - 1 }, what, fixed: true });
        }
      }
    }
    const reported = new Set<string>();
    for (let j = 1; j < claims.length; j++) {
      const b = claims[j]!;
      for (let i = 0; i < j; i++) {
        const a = claims[i]!;
        if (a.service === b.service || (!a.fixed && !b.fixed)) continue;
        const lo = Math.max(a.range.lo, b.range.lo);
        const hi = Math.min(a.range.hi, b.range.hi);
        if (lo > hi) continue;
        const pair = `${a.service}\0${b.service}`;
        if (reported.has(pair)) continue;
        reported.add(pair);
        // "on ports" only adds something when neither side lies wholly inside the other.
        const same = (a.range.lo === lo && a.range.hi === hi) || (b.range.lo === lo && b.range.hi === hi);
        const onPorts = same ? '' : ` on ports ${formatRange({ lo, hi })}`;
        const overlap = `${b.what} overlaps ${a.what} of service "${a.service}" (line ${a.line})${onPorts}`;
        this.add(b.line, `service "${b.service}": ${overlap}; give each service its own ports`);
      }
    }
  }

  private jobs(): void {
    let first: Draft | undefined;
    for (const draft of this.drafts) {
      if (!draft.spec.job) continue;
      const label = `service "${draft.spec.name}"`;
      if (first) this.add(draft.jobLine, `${label}: only one service may be the job; "${first.spec.name}" (line ${first.jobLine}) already is`);
      else first = draft;
    }
  }
}

