import { formatRange, intersectRanges, normalizeRanges, rangeSize, subtractRanges, unreservedEphemeral } from '../host/intervals.js';
import type { HostSysctls, PortRange } from '../host/host-map.js';
import { DEFAULT_SOURCE, usableFloor } from './default-layout.js';
import { LINUX_EPHEMERAL_START, portRangeCommand, suggestedEphemeral } from './ephemeral-fix.js';
import { suggestBandRange, type RangeSuggestion } from './suggest.js';
import type { Band, Finding, Fix, Layout } from './layout-model.js';
import { instanceCount, instanceWindow } from './windows.js';
import { instancesText, list, plural, quoteNames, reservedPortsCommand, sum } from './check-text.js';

/*
 * berth doctor's audit, pure: a layout and the host's three sysctls in, findings out.
 * Every error and warning carries complete alternative fixes: the exact sysctl line to
 * run, or where to move the band.
 */

/** Below this many ports left for connect(), a busy host runs out of source ports. */
export const SMALL_EPHEMERAL_PORTS = 10000;
export const SYSCTL_CONF = '/etc/sysctl.d/90-berth.conf';
/** torch.distributed's default MASTER_PORT: the classic victim of a low ephemeral range. */
const TORCH_MASTER_PORT = 29500;

class Checker {
  readonly findings: Finding[] = [];
  private readonly open: PortRange[];
  private readonly floor: number;
  /** Ranges already suggested for earlier bands, so applying every band-range fix yields a valid layout. */
  private readonly suggested = new Map<string, RangeSuggestion | null>();

  constructor(
    private readonly layout: Layout,
    private readonly host: HostSysctls,
  ) {
    this.open = unreservedEphemeral(host.ephemeral, host.reserved);
    this.floor = usableFloor(host);
  }

  private label(b: Band): string {
    const at = b.line !== undefined && this.layout.source !== DEFAULT_SOURCE ? `${this.layout.source}:${b.line}: ` : '';
    return `${at}band "${b.name}" ${formatRange(b)}`;
  }

  private exposedOf(r: PortRange): PortRange[] {
    return this.open.flatMap((o) => intersectRanges(r, o) ?? []);
  }

  private suggestion(b: Band): RangeSuggestion | null {
    const known = this.suggested.get(b.name);
    if (known !== undefined) return known;
    const avoid: PortRange[] = this.layout.bands.filter((o) => o !== b).map((o) => ({ lo: o.lo, hi: o.hi }));
    for (const s of this.suggested.values()) if (s) avoid.push(s.range);
    const s = suggestBandRange(b, this.host, avoid) ?? null;
    this.suggested.set(b.name, s);
    return s;
  }

  /** The band-range fix, or a sentence saying why there is none (appended to the message). */
  private moveFix(b: Band): { fix?: Fix; none?: string } {
    const s = this.suggestion(b);
    const size = rangeSize(b);
    if (!s) {
      return {
        none: ` No run of ${plural(size, 'free port')} lies at or above ${this.floor}, outside the ephemeral range and clear of the other bands, so the ` +
          `band cannot simply move.`,
      };
    }
    let shape = plural(size, 'port');
    if (b.window !== undefined && b.window > 1) {
      shape += s.aligned ? `, windows of ${b.window} keep their alignment` : `; no free spot keeps the window-${b.window} alignment`;
    }
    const others = this.layout.bands.length > 1 ? ' and clear of the other bands' : '';
    return {
      fix: {
        kind: 'band-range',
        band: b.name,
        range: s.range,
        description: `move band "${b.name}" to ${formatRange(s.range)} (${shape}): outside the unreserved ephemeral range, at or above port ` +
          `${this.floor}${others}`,
      },
    };
  }

  private ephemeralFix(): Fix {
    const next = suggestedEphemeral(this.host);
    const nowOpen = unreservedEphemeral(next, this.host.reserved);
    const hit = this.layout.bands.filter((b) => nowOpen.some((o) => intersectRanges(b, o)));
    const warn =
      hit.length === 0
        ? ''
        : ` ${hit.length === 1 ? 'Band' : 'Bands'} ${quoteNames(hit)} would then lie in the ephemeral range: reserve or move ` +
          `${hit.length === 1 ? 'it' : 'them'} too.`;
    return {
      kind: 'sysctl',
      command: portRangeCommand(next),
      description: `set the ephemeral range to ${formatRange(next)} (${plural(sum(nowOpen), 'port')} for outgoing connections); needs root and applies at ` +
        `once; to keep it across reboots add "net.ipv4.ip_local_port_range = ${next.lo} ${next.hi}" to ${SYSCTL_CONF}.${warn}`,
    };
  }

  host_(): void {
    const { ephemeral, reserved, unprivilegedStart } = this.host;
    this.findings.push({
      severity: 'info',
      code: 'host-ranges',
      message: `host: ephemeral range ${formatRange(ephemeral)} (${plural(rangeSize(ephemeral), 'port')}), reserved: ${list(reserved)}, unprivileged ports ` +
        `from ${unprivilegedStart}`,
      ranges: [ephemeral],
    });
    if (ephemeral.lo < LINUX_EPHEMERAL_START) {
      const torch = this.open.some((o) => TORCH_MASTER_PORT >= o.lo && TORCH_MASTER_PORT <= o.hi)
        ? `, including common service ports such as ${TORCH_MASTER_PORT} (torch.distributed's default MASTER_PORT)`
        : '';
      this.findings.push({
        severity: 'warning',
        code: 'ephemeral-low',
        message: `the ephemeral range ${formatRange(ephemeral)} starts below ${LINUX_EPHEMERAL_START} (the Linux default start): outgoing connections may ` +
          `take any free unreserved port from ${ephemeral.lo} up${torch}`,
        ranges: [ephemeral],
        fixes: [this.ephemeralFix()],
      });
    }
    const left = sum(this.open);
    if (left < SMALL_EPHEMERAL_PORTS) {
      const why = left === rangeSize(ephemeral) ? '' : ` once the reserved ports are skipped`;
      this.findings.push({
        severity: 'warning',
        code: 'ephemeral-small',
        message: `the ephemeral range ${formatRange(ephemeral)} leaves only ${plural(left, 'port')} for outgoing connections${why}: a busy host can run out ` +
          `(connect() fails with EADDRNOTAVAIL)`,
        ranges: this.open,
        fixes: [this.ephemeralFix()],
      });
    }
  }

  noBands(): void {
    const builtIn = this.layout.source === DEFAULT_SOURCE;
    this.findings.push({
      severity: 'error',
      code: 'no-bands',
      message: builtIn
        ? `no port at or above ${this.floor} lies outside the unreserved ephemeral range ${list(this.open)}, so there is no default band to take ` +
          `ports from; shrink the ephemeral range or reserve a block of ports`
        : `${this.layout.source}: the layout defines no band; add one under "bands:", e.g. web: { range: 20000-20099 }`,
      ...(builtIn ? { fixes: [this.ephemeralFix()] } : {}),
    });
  }

  band(b: Band, index: number, exposedBands: Map<Band, PortRange[]>): void {
    const label = this.label(b);
    let problems = 0;

    for (const a of this.layout.bands.slice(0, index)) {
      const x = intersectRanges(a, b);
      if (!x) continue;
      problems++;
      const { fix, none } = this.moveFix(b);
      this.findings.push({
        severity: 'error',
        code: 'band-overlap',
        band: b.name,
        message: `${label}: overlaps band "${a.name}" ${formatRange(a)} on ports ${formatRange(x)}; bands must not share ports.${none ?? ''}`,
        ranges: [x],
        ...(fix ? { fixes: [fix] } : {}),
      });
    }

    if (b.lo < this.host.unprivilegedStart) {
      problems++;
      const low = { lo: b.lo, hi: Math.min(b.hi, this.host.unprivilegedStart - 1) };
      const { fix, none } = this.moveFix(b);
      const fixes: Fix[] = fix ? [fix] : [];
      fixes.push({
        kind: 'sysctl',
        command: `sysctl -w net.ipv4.ip_unprivileged_port_start=${b.lo}`,
        description: `let every user bind ports from ${b.lo} up (a host-wide change); needs root; to keep it across reboots add ` +
          `"net.ipv4.ip_unprivileged_port_start = ${b.lo}" to ${SYSCTL_CONF}`,
      });
      this.findings.push({
        severity: 'error',
        code: 'band-privileged',
        band: b.name,
        message: `${label}: ports ${formatRange(low)} are below net.ipv4.ip_unprivileged_port_start (${this.host.unprivilegedStart}), so only root or ` +
          `CAP_NET_BIND_SERVICE can bind them.${none ?? ''}`,
        ranges: [low],
        fixes,
      });
    } else if (b.lo < 1024) {
      problems++;
      const low = { lo: b.lo, hi: Math.min(b.hi, 1023) };
      const { fix, none } = this.moveFix(b);
      this.findings.push({
        severity: 'warning',
        code: 'band-well-known',
        band: b.name,
        message: `${label}: ports ${formatRange(low)} are well-known ports (below 1024) that system services expect to own.${none ?? ''}`,
        ranges: [low],
        ...(fix ? { fixes: [fix] } : {}),
      });
    }

    const exposed = this.exposedOf(b);
    if (exposed.length > 0) {
      problems++;
      exposedBands.set(b, exposed);
      const n = sum(exposed);
      let msg = `${label}: ${n} of its ${rangeSize(b)} ports (${list(exposed)}) lie in the ephemeral range ${formatRange(this.host.ephemeral)} and are not ` +
        `in net.ipv4.ip_local_reserved_ports, so any outgoing connection can take them`;
      if (b.window !== undefined) {
        const count = instanceCount(b);
        const hit: number[] = [];
        for (let i = 0; i < count; i++) if (this.exposedOf(instanceWindow(b, i)).length > 0) hit.push(i);
        msg += `; ${instancesText(hit, count)}`;
      }
      const { fix, none } = this.moveFix(b);
      const merged = normalizeRanges([...this.host.reserved, ...exposed]);
      const kept = this.host.reserved.length === 0 ? 'nothing is reserved now' : `keeping the ports already reserved (${list(this.host.reserved)})`;
      const fixes: Fix[] = [
        {
          kind: 'sysctl',
          command: reservedPortsCommand(merged),
          description: `reserve the exposed ports so the kernel never hands them to outgoing connections (${kept}); needs root and applies at once; to keep ` +
            `it across reboots add "net.ipv4.ip_local_reserved_ports = ${list(merged)}" to ${SYSCTL_CONF}`,
        },
      ];
      if (fix) fixes.push(fix);
      this.findings.push({ severity: 'error', code: 'band-in-ephemeral', band: b.name, message: `${msg}.${none ?? ''}`, ranges: exposed, fixes });
    }

    if (b.window !== undefined) {
      const count = instanceCount(b);
      const rest = rangeSize(b) - count * b.window;
      if (rest > 0) {
        const tail = { lo: b.hi - rest + 1, hi: b.hi };
        this.findings.push({
          severity: 'info',
          code: 'window-remainder',
          band: b.name,
          message: `${label}: window ${b.window} fits ${plural(count, 'instance')}; the last ${plural(rest, 'port')} (${formatRange(tail)}) belong to no ` +
            `instance`,
          ranges: [tail],
        });
      }
    }

    if (problems > 0) return;
    const shape = b.window !== undefined ? ` (${plural(instanceCount(b), 'window')} of ${b.window})` : '';
    const guarded = subtractRanges(b, normalizeRanges([{ lo: 0, hi: this.host.ephemeral.lo - 1 }, { lo: this.host.ephemeral.hi + 1, hi: 65535 }]));
    if (guarded.length > 0) {
      this.findings.push({
        severity: 'info',
        code: 'band-reserved',
        band: b.name,
        message: `${label}${shape}: ports ${list(guarded)} lie in the ephemeral range ${formatRange(this.host.ephemeral)} but are reserved ` +
          `(net.ipv4.ip_local_reserved_ports), so they stay safe only while that reservation does; make sure it is persisted in /etc/sysctl.d/`,
        ranges: guarded,
      });
      return;
    }
    this.findings.push({
      severity: 'info',
      code: 'band-ok',
      band: b.name,
      message: `${label}${shape}: outside the ephemeral range ${formatRange(this.host.ephemeral)} and at or above the unprivileged start ` +
        `${this.host.unprivilegedStart}`,
    });
  }

  reserveAll(exposedBands: Map<Band, PortRange[]>): void {
    if (exposedBands.size < 2) return;
    for (const f of this.findings) {
      if (f.code !== 'band-in-ephemeral') continue;
      for (const fix of f.fixes ?? []) {
        if (fix.kind === 'sysctl') fix.description += '; other bands are exposed too: the reserve-all finding has one line for all of them';
      }
    }
    const all = [...exposedBands.values()].flat();
    const merged = normalizeRanges([...this.host.reserved, ...all]);
    this.findings.push({
      severity: 'info',
      code: 'reserve-all',
      message: `bands ${quoteNames([...exposedBands.keys()])} all have exposed ports; each "sysctl -w" replaces the whole reserved list, so running the ` +
        `per-band lines one after another keeps only the last: this one line reserves them all`,
      ranges: all,
      fixes: [
        {
          kind: 'sysctl',
          command: reservedPortsCommand(merged),
          description: `reserve the exposed ports of every band at once, keeping those already reserved; to keep it across reboots add ` +
            `"net.ipv4.ip_local_reserved_ports = ${list(merged)}" to ${SYSCTL_CONF}`,
        },
      ],
    });
  }
}

/**
 * Audits a layout against a host: bands must not overlap, must lie at or above the
 * unprivileged start, and must keep out of the unreserved ephemeral range. Host-wide
 * findings carry no band; band findings carry the band's name.
 */
export function checkLayout(layout: Layout, host: HostSysctls): Finding[] {
  const c = new Checker(layout, host);
  c.host_();
  if (layout.bands.length === 0) c.noBands();
  const exposed = new Map<Band, PortRange[]>();
  layout.bands.forEach((b, i) => c.band(b, i, exposed));
  c.reserveAll(exposed);
  return c.findings;
}
