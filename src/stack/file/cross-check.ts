import { formatRange, rangeSize } from '../../host/intervals.js';
import type { PortRange } from '../../host/types.js';
import { DEFAULT_BAND } from '../../layout/default-layout.js';
import type { Band, Layout } from '../../layout/types.js';
import { instanceCount } from '../../layout/windows.js';
import { didYouMean } from '../../util/yaml-source.js';
import { findCycles } from './graph.js';
import { declaresPort, markOneShots } from './one-shot.js';
import type { Draft } from './draft.js';
import type { Placeholder } from './placeholders.js';
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
  /**
   * A portless step's {ports.X} most likely means another service's port X: name it as
   * {SVC.port.X} (its dependencies first), or say how, when no service has that port.
   */
  private otherPortHint(d: Draft, port: string, text: string): string {
    const has = (x: Draft) => x !== d && [...x.spec.ports, ...x.spec.shared].some((e) => e.name === port);
    const deps = new Set(d.spec.dependsOn.map((x) => x.service));
    const owners = this.drafts.filter(has).sort((a, b) => Number(deps.has(b.spec.name)) - Number(deps.has(a.spec.name)));
    const field = text.slice('{ports.'.length);
    if (owners.length > 0) return `; {ports.NAME} is the service's own port: for ${owners[0]!.spec.name}'s, write {${owners[0]!.spec.name}.port.${field}`;
    return `; {ports.NAME} is the service's own port: another service's is {SERVICE.port.${field}`;
  }

  private readonly byName: Map<string, Draft>;
  private readonly names: string[];

  constructor(
    private readonly report: (line: number, text: string) => void,
    private readonly drafts: Draft[],
    private readonly layout: Layout | undefined,
  ) {
    this.byName = new Map(drafts.map((d) => [d.spec.name, d]));
    this.names = drafts.map((d) => d.spec.name);
  }

  private add(line: number, text: string): void {
    this.report(line, text);
  }

  run(): void {
    const noPort = markOneShots(this.drafts);
    for (const d of this.drafts) this.inferPorts(d, noPort.has(d.spec.name));
    for (const d of this.drafts) this.portSet(d);
    for (const d of this.drafts) this.dependencies(d);
    this.cycles();
    for (const d of this.drafts) this.placeholders(d);
    const specs = new Map(this.drafts.map((d) => [d.spec.name, d.spec]));
    for (const d of this.drafts) if (!d.broken) for (const [line, text] of templateFileProblems(d.spec, specs)) this.add(line, text);
    this.ports();
    this.jobs();
  }

  private inferPorts(d: Draft, oneShotNoPort: boolean): void {
    if (d.source) return;
    if ((d.spec.job || oneShotNoPort) && !declaresPort(d)) {
      d.spec.source = { kind: 'none' };
      return;
    }
    const band = this.layout?.bands.find((b) => b.name === DEFAULT_BAND);
    d.spec.source = band ? { kind: 'band', band, instance: 0 } : { kind: 'default' };
  }

  /** `ports:` against where the ports come from: sizes, windows, a fixed port. */
  private portSet(d: Draft): void {
    const s = d.spec;
    const src = s.source;
    if (src.kind === 'none') {
      if (s.portsDeclared) this.add(d.portsLine!, `service "${s.name}": "ports:" and "port: none" contradict each other; remove one`);
      s.ports = [];
      return;
    }
    if (!s.portsDeclared || d.portsBroken) return;
    const say = (text: string) => {
      d.broken = true;
      this.add(d.portsLine!, `service "${s.name}": ports: ${text}`);
    };
    // A shared port comes from replica 0's window or share: count it for every replica.
    const need = portsNeeded(s.ports) + portsNeeded(s.shared);
    const windows = s.ports.filter((e) => e.kind === 'window');
    const desc = `${s.ports.length === 1 ? 'its port' : `its ${s.ports.length} entries`} need${s.ports.length === 1 ? 's' : ''} ${need} port${need === 1 ? '' : 's'}${windows.length > 0 ? ` (with at least 1 for "${windows[0]!.name}")` : ''}`;
    if (windows.length > 1) return say(`${windows.map((w) => `"${w.name}"`).join(' and ')} are both { block: window }; a replica has one window`);
    if (src.kind === 'port') {
      if (need > 1 || windows.length > 0) say(`"port: ${src.port}" is one port, but ${desc}; use band: NAME or range: LO-HI`);
      return;
    }
    const band = src.kind === 'band' ? src.band : undefined;
    if (windows.length > 0 && band?.window === undefined) {
      const where = band ? `band "${band.name}" has no window` : src.kind === 'range' ? 'a range is no one\'s window' : 'the built-in default band has no window';
      return say(`"${windows[0]!.name}" is { block: window }, the replica's band window, but ${where}; use a band with "window:" or { block: N }`);
    }
    if (band?.window !== undefined) {
      if (need > band.window) say(`each replica takes its ports from its window of band "${band.name}" (${band.window} ports), but ${desc}; widen the window or shrink the set`);
      return;
    }
    // A band without windows or a range: every replica's set is placed anywhere in it.
    const range = band ?? (src.kind === 'range' ? src.range : undefined);
    if (!range) return; // the built-in band's size is known only on the host
    const n = typeof s.replicas === 'number' ? s.replicas : 1;
    const size = rangeSize(range);
    if (need * n > size) {
      const what = band ? `band "${band.name}" (${formatRange(band)})` : `range ${formatRange(range)}`;
      say(`${n === 1 ? '' : `${n} replicas × `}${need} ports do not fit ${what}, which has ${size}; widen it or shrink the set`);
    }
  }

  private dependencies(d: Draft): void {
    const label = `service "${d.spec.name}"`;
    for (const dep of d.spec.dependsOn) {
      if (dep.service === d.spec.name) {
        this.add(dep.line, `${label}: depends on itself; remove "${dep.service}" from its depends_on`);
        continue;
      }
      const target = this.byName.get(dep.service);
      if (!target) {
        this.add(dep.line, `${label}: depends on "${dep.service}", which is not a service of this stack${didYouMean(dep.service, this.names)}; services: ${this.names.join(', ')}`);
        continue;
      }
      if (dep.condition === 'completed' && target.spec.job) {
        this.add(dep.line, `${label}: depends on "${dep.service}" completing, but "${dep.service}" is the job: the stack ends when it exits`);
      }
    }
  }

  private cycles(): void {
    const nodes = this.drafts.map((d) => ({ name: d.spec.name, dependsOn: d.spec.dependsOn.filter((x) => x.service !== d.spec.name) }));
    for (const cycle of findCycles(nodes)) {
      const from = this.byName.get(cycle[0]!)!;
      const line = from.spec.dependsOn.find((x) => x.service === cycle[1])?.line ?? from.spec.line;
      this.add(line, `service "${cycle[0]}": dependency cycle ${cycle.join(' → ')}; remove one of these depends_on entries`);
    }
  }

  private placeholders(d: Draft): void {
    const label = `service "${d.spec.name}"`;
    if (d.spec.ready?.kind === 'tcp' && d.spec.source.kind === 'none') this.add(d.readyLine, `${label}: "ready: tcp" needs a port, but the service has "port: none"`);
    const onlyShared = d.spec.source.kind !== 'none' && d.spec.ports.length === 0 && !d.portsBroken;
    if (d.spec.ready?.kind === 'tcp' && onlyShared) this.add(d.readyLine, `${label}: "ready: tcp" probes the replica's own port, but its only ports are shared (${d.spec.shared.map((e) => e.name).join(', ')}); add a port of its own or use ready: http/cmd`);
    const deps = new Set(d.spec.dependsOn.map((x) => x.service));
    const reported = new Set<string>();
    for (const t of d.templates) {
      for (const ph of t.parts) {
        if (typeof ph === 'string') continue;
        const key = `${t.where}\0${ph.text}`;
        if (reported.has(key)) continue;
        const say = (msg: string) => {
          reported.add(key);
          this.add(t.line, `${label}: ${t.where} uses ${ph.text}${msg}`);
        };
        const learned = learnedNamed(ph, d, this.byName);
        if (learned !== undefined) {
          const [owner, entry] = learned;
          const mine = owner === d;
          if (mine && t.where !== 'ready') {
            say(`, but "${entry}" is a port ${d.spec.name} chooses itself (learn): it is known only once the replica listens on it, so its own command, env and templates cannot name it; its ready probe and its dependents can`);
            continue;
          }
          const cond = d.spec.dependsOn.find((x) => x.service === owner.spec.name)?.condition;
          if (!mine && cond === 'started') {
            say(`, but "${entry}" is a port ${owner.spec.name} chooses itself (learn), known once it is ready, and ${d.spec.name} waits only for it to be started; write depends_on: { ${owner.spec.name}: ready }`);
            continue;
          }
        }
        if (ph.kind === 'own') {
          if (d.spec.source.kind === 'none') say(`, but the service has "port: none"${this.otherPortHint(d, ph.port, ph.text)}`);
          else if (!d.portsBroken) {
            const problem = portNameProblem(ph, d, 'its');
            if (problem) say(problem);
          }
          continue;
        }
        if (ph.kind === 'template') {
          if (!d.templatesBroken && !d.spec.templates.some((x) => x.name === ph.template)) {
            const names = d.spec.templates.map((x) => x.name);
            say(names.length === 0 ? ', but the service has no "templates:"; add templates: { NAME: FILE }' : `, but its templates are ${names.join(', ')}${didYouMean(ph.template, names)}`);
          }
          continue;
        }
        if (ph.kind === 'self') {
          if (ph.field === 'port' && d.spec.source.kind === 'none') say(', but the service has "port: none"');
          else if (ph.field === 'port' && onlyShared) say(`, but its only ports are shared; use {ports.${d.spec.shared[0]!.name}}`);
          if (ph.field === 'gpu' && d.spec.replicas !== 'gpus') say(', but the service does not have "replicas: gpus" (one replica per GPU of the Slurm job)');
          continue;
        }
        // Its own service is fine with nodes: too: the agents wait until every node's replicas are leased (peer-wait.ts).
        const self = ph.service === d.spec.name;
        const target = this.byName.get(ph.service);
        if (!target) {
          say(`, but there is no service "${ph.service}"${didYouMean(ph.service, this.names)}; services: ${this.names.join(', ')}`);
          continue;
        }
        if (ph.field === 'dir' || ph.field === 'dirs') {
          // Paths are known before anything starts: no dependency needed, but the same host.
          if (d.spec.nodes !== undefined || target.spec.nodes !== undefined) say(`, but a replica's directory is on its own node, and "${(target.spec.nodes !== undefined ? target : d).spec.name}" runs on the Slurm nodes (nodes:)`);
          else if (ph.field === 'dir' && target.spec.replicas !== 1) say(`, but "${ph.service}" has ${target.spec.replicas === 'gpus' ? 'one replica per GPU' : `${target.spec.replicas} replicas`}; use {${ph.service}.dirs} (all of them, comma-separated)`);
          continue;
        }
        if (!self && !deps.has(ph.service)) {
          say(`, but "${ph.service}" is not in its depends_on; add depends_on: { ${ph.service}: ready } (or started, to need only its port)`);
          continue;
        }
        if (target.spec.source.kind === 'none') {
          const why = target.source?.kind === 'none' ? '"port: none"' : target.spec.job ? 'a job without band, port, range or {port}' : 'a one-shot step that others wait for with "completed" gets no port unless it declares one: give it port:, band:, ports: or {port}';
          say(`, but "${ph.service}" has no port (${why})`);
          continue;
        }
        if ((ph.field === 'url' || ph.field === 'urls') && target.spec.scheme === null) {
          say(`, but "${ph.service}" has "scheme: none" (no URL); use {${ph.service}.hostport${ph.field === 'urls' ? 's' : ''}}, or give it a scheme`);
          continue;
        }
        if (ph.port === undefined && !target.portsBroken && target.spec.ports.length === 0) {
          say(`, but "${ph.service}" has only shared ports; use {${ph.service}.port.${target.spec.shared[0]!.name}} (or .host / .hostport after it)`);
          continue;
        }
        if (ph.port !== undefined && !target.portsBroken) {
          const problem = portNameProblem(ph, target, `"${ph.service}"'s`);
          if (problem) {
            say(problem);
            continue;
          }
        }
        const sharedPort = ph.port !== undefined && target.spec.shared.some((e) => e.name === ph.port);
        const acrossNodes = self && target.spec.nodes !== undefined;
        if (!sharedPort && (ph.field === 'port' || ph.field === 'url' || ph.field === 'host' || ph.field === 'hostport') && (target.spec.replicas !== 1 || acrossNodes)) {
          const n = acrossNodes ? 'replicas on several nodes (nodes:)' : target.spec.replicas === 'gpus' ? 'one replica per GPU' : `${target.spec.replicas} replicas`;
          const rest = ph.text.slice(ph.service.length + 1 + ph.field.length + 1, -1);
          say(`, but "${ph.service}" has ${n}; use {${ph.service}.${ph.field}s${rest}} (all of them, comma-separated)`);
        }
      }
    }
  }

  private ports(): void {
    const claims: Claim[] = [];
    for (const d of this.drafts) {
      if (d.broken) continue;
      const label = `service "${d.spec.name}"`;
      const ports = d.spec.source;
      const line = d.source?.line ?? d.spec.line;
      const n = d.spec.replicas;
      if (ports.kind === 'port') {
        if (typeof n === 'number' && n > 1) {
          this.add(d.replicasLine, `${label}: replicas ${n} with the fixed port ${ports.port}: every replica would need port ${ports.port}; use range: LO-HI or a band with a window`);
          continue;
        }
        if (n === 'gpus') {
          this.add(d.replicasLine, `${label}: replicas "gpus" with the fixed port ${ports.port}: every replica would need port ${ports.port}; use range: LO-HI or a band with a window`);
          continue;
        }
        claims.push({ service: d.spec.name, line, range: { lo: ports.port, hi: ports.port }, what: `port ${ports.port}`, fixed: true });
      } else if (ports.kind === 'range') {
        claims.push({ service: d.spec.name, line, range: ports.range, what: `range ${formatRange(ports.range)}`, fixed: true });
      } else if (ports.kind === 'band') {
        const b = ports.band;
        if (b.window === undefined) {
          claims.push({ service: d.spec.name, line, range: { lo: b.lo, hi: b.hi }, what: describeBand(b), fixed: false });
          continue;
        }
        if (n === 'gpus') continue; // the window count is known only under Slurm
        const count = instanceCount(b);
        const lastNeeded = ports.instance + n - 1;
        if (lastNeeded >= count) {
          const who = n === 1 ? `instance ${ports.instance} needs window ${ports.instance}` : `replicas ${n} from instance ${ports.instance} need windows ${ports.instance}-${lastNeeded}`;
          this.add(d.replicasLine === d.spec.line ? line : d.replicasLine, `${label}: ${who} of ${describeBand(b)}, which has ${count} (0-${count - 1}); widen the band, use a smaller window, or lower replicas`);
          continue;
        }
        for (let r = 0; r < n; r++) {
          const w = ports.instance + r;
          const lo = b.lo + w * b.window;
          const win = `window ${w} of band "${b.name}" (${formatRange({ lo, hi: lo + b.window - 1 })})`;
          claims.push({ service: d.spec.name, line, range: { lo, hi: lo + b.window - 1 }, what: n === 1 ? win : `replica ${r}'s ${win}`, fixed: true });
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
        this.add(b.line, `service "${b.service}": ${b.what} overlaps ${a.what} of service "${a.service}" (line ${a.line})${same ? '' : ` on ports ${formatRange({ lo, hi })}`}; give each service its own ports`);
      }
    }
  }

  private jobs(): void {
    let first: Draft | undefined;
    for (const d of this.drafts) {
      if (!d.spec.job) continue;
      const label = `service "${d.spec.name}"`;
      if (first) this.add(d.jobLine, `${label}: only one service may be the job; "${first.spec.name}" (line ${first.jobLine}) already is`);
      else first = d;
    }
  }
}


/** The service and entry of a learned port that a placeholder names, or undefined. */
function learnedNamed(ph: Placeholder, d: Draft, byName: ReadonlyMap<string, Draft>): [Draft, string] | undefined {
  const primary = (x: Draft) => x.spec.ports[0];
  const entryOf = (x: Draft, name: string | undefined) => (name === undefined ? primary(x) : x.spec.ports.find((e) => e.name === name));
  let owner: Draft | undefined;
  let entry;
  if (ph.kind === 'own') [owner, entry] = [d, entryOf(d, ph.port)];
  else if (ph.kind === 'self' && ph.field === 'port') [owner, entry] = [d, primary(d)];
  else if (ph.kind === 'service' && ph.field !== 'dir' && ph.field !== 'dirs') {
    owner = byName.get(ph.service);
    entry = owner ? entryOf(owner, ph.port) : undefined;
  }
  return owner && entry?.kind === 'learn' ? [owner, entry.name] : undefined;
}

/** ", but … has no port NAME; …" when a placeholder names a port the set does not have. */
function portNameProblem(ph: Placeholder, owner: Draft, whose: string): string | undefined {
  const name = ph.kind === 'own' || ph.kind === 'service' ? ph.port : undefined;
  if (name === undefined || owner.spec.ports.some((e) => e.name === name) || owner.spec.shared.some((e) => e.name === name)) return undefined;
  const names = [...owner.spec.ports, ...owner.spec.shared].map((e) => e.name);
  return `, but ${whose} ports are ${names.join(', ')}${didYouMean(name, names)}${owner.spec.portsDeclared ? '' : ' (without "ports:" a service has one port, named "port")'}`;
}
