import { formatRange, normalizeRanges } from '../host/intervals.js';
import { formatReservedPorts } from '../host/sysctl.js';
import type { PortRange } from '../host/host-map.js';
import { cleanText } from '../util/clean-text.js';
import { redactText } from '../util/redact.js';
import type { AllocationReport, PortSource } from './allocation-types.js';

/* The exit-69 message: why a source could not give `needed` ports, and what to do. Pure: every branch is tested without a host. */

export interface ExplainInput {
  report: AllocationReport;
  needed: number;
  /** Ports that looked usable (the planner's candidates). */
  usable: number;
  /** Ports leased and held before giving up (all given back). */
  got: number;
  ranges: readonly PortRange[];
  ephemeralInSource: readonly PortRange[];
  host: { ephemeral: PortRange; reserved: readonly PortRange[]; unprivilegedStart: number };
  /** As root every process is visible: a socket without an owner is then not "hidden". */
  isRoot?: boolean;
  /** Usable ports of the source that the set's other requests took (not counted in `usable`). */
  ownInSet?: readonly number[];
  /** A block request: how many runs of `needed` contiguous usable ports there were, and the longest free run. */
  block?: { runs: number; longest?: PortRange };
}

const SHOWN = 5;

export function describeSource(s: PortSource): string {
  if (s.kind === 'port') return `port ${s.port}`;
  if (s.kind === 'range') return `range ${formatRange(s.range)}`;
  const inst = s.instance === undefined ? '' : ` instance ${s.instance}`;
  const file = s.layoutFile === undefined ? '' : ` of ${s.layoutFile}`;
  return `band ${s.band}${inst}${file} (${formatRange(s.range)})`;
}

type InUse = AllocationReport['excluded']['inUse'][number];
type Leased = AllocationReport['excluded']['leased'][number];

// Names and command lines may be other users': never print their control characters.
const command = (c: string | undefined) => (c ? ` (${cleanText(truncate(redactText(c, { commandLine: true }), 60))})` : '');

export function describeInUse(u: InUse, isRoot = false): string {
  if (u.inProgress) return `${u.port} being allocated by berth${u.pid !== undefined ? ` pid ${u.pid}` : ''}${command(u.command)} (a set in progress)`;
  if (u.heldByBerth) return `${u.port} held by berth pid ${u.pid}${command(u.command)}`;
  if (u.closedSince) return `${u.port} ${u.state}, closed just after (its holder let go)`;
  const who =
    u.pid !== undefined
      ? `pid ${u.pid}${command(u.command)}`
      : u.state === 'TIME_WAIT'
        ? 'kernel-held, closing'
        : u.uid !== undefined
          ? isRoot
            ? `uid ${u.uid}, held by no process of this PID namespace`
            : `uid ${u.uid}, process not visible`
          : 'owner unknown';
  const lease = u.leasedAs !== undefined ? `, leased as "${cleanText(truncate(u.leasedAs, 60))}" (a port its service chose, learned by berth)` : '';
  // A UDP socket has no LISTEN: its state (UNCONN/ESTAB) says less than its protocol.
  return u.protocol === 'udp' ? `${u.port} UDP socket by ${who}` : `${u.port} ${u.state} by ${who}${lease}`;
}

export function describeLeased(l: Leased): string {
  const name = l.name !== undefined ? ` "${cleanText(truncate(l.name, 60))}"` : '';
  const user = l.uid === undefined ? '' : l.user !== undefined ? `${l.user}, uid ${l.uid}` : `uid ${l.uid}`;
  if (l.kind === 'pending')
    return `${l.port} being allocated by berth${l.pid !== undefined ? ` pid ${l.pid}` : ''}${user === '' ? '' : ` of ${user}`}${command(l.command)} ` +
      `(a set in progress)`;
  const owner = l.pid === undefined ? 'no owner pid (expiry only)' : l.ownerGone ? `pid ${l.pid} (owner gone from this PID namespace, yet the lease ` +
    `is still held)` : `pid ${l.pid}`;
  return `${l.port} leased to ${owner}${user === '' ? '' : ` of ${user}`}${name}${command(l.command)}`;
}

function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

function list<T>(items: readonly T[], show: (t: T) => string): string {
  const head = items.slice(0, SHOWN).map(show).join('; ');
  return items.length > SHOWN ? `${head}; and ${items.length - SHOWN} more` : head;
}

function sysctlHint(input: ExplainInput): string {
  const wanted = formatReservedPorts(normalizeRanges([...input.host.reserved, ...input.ephemeralInSource]));
  return `sysctl -w net.ipv4.ip_local_reserved_ports=${wanted}`;
}

export function explainUnavailable(input: ExplainInput): string {
  const { report, host } = input;
  const x = report.excluded;
  const eph = `the ephemeral range ${formatRange(host.ephemeral)} (net.ipv4.ip_local_port_range)`;
  if (report.source.kind === 'port') {
    const p = report.source.port;
    const head = `port ${p} is not available`;
    if (x.privileged > 0) {
      // Privileged ports are the host's own services', not a pool berth shares out (the library's allowPrivileged is for root-run tools).
      return `${head}: it is below net.ipv4.ip_unprivileged_port_start=${host.unprivilegedStart}, and berth does not lease privileged ports; pick a ` +
        `port >= ${host.unprivilegedStart}`;
    }
    if (x.ephemeral > 0) {
      return `${head}: it is inside ${eph} and not reserved, so any outgoing connection may take it; reserve it (${sysctlHint(input)}), pick a port ` +
        `outside the range, or pass --allow-ephemeral`;
    }
    const u = x.inUse[0];
    if (u) return `${head}: it is in use: ${describeInUse(u, input.isRoot)}`;
    const l = x.leased[0];
    if (l) {
      const hint = l.kind === undefined ? `; see berth leases (its holder ends it: berth release --port ${p})` : '; it was still being allocated when ' +
        'berth gave up';
      return `${head}: ${describeLeased(l)}${hint}`;
    }
    const b = x.bindFailed[0];
    if (b) return `${head}: binding ${b.protocol === 'udp' ? 'its UDP side' : 'it'} failed ` +
      `(${b.code})${b.code === 'EADDRINUSE' ? ', although no socket was listed a moment before: another process took it just now' : ''}`;
    const r = x.raced[0];
    if (r) return `${head}: lost to a concurrent allocator (${r.reason})`;
    return `${head}`;
  }
  const src = describeSource(report.source);
  const { needed, usable, got } = input;
  const block = input.block;
  const longest = block?.longest === undefined ? 'no port is usable' : `the longest run of usable ports is ${formatRange(block.longest)} ` +
    `(${block.longest.hi - block.longest.lo + 1})`;
  const head = block
    ? block.runs === 0
      ? `no ${needed} contiguous usable ports in ${src} (${report.considered} considered, ${usable} usable): ${longest}`
      : `could not get a block of ${needed} contiguous ports in ${src}: each of the ${block.runs} run${block.runs === 1 ? '' : 's'} that looked ` +
        `usable lost a port (${report.considered} considered)`
    : usable < needed
      ? `${usable === 0 ? 'no usable port' : `only ${usable} usable port${usable === 1 ? '' : 's'}`} in ${src} (${report.considered} considered), ` +
        `needed ${needed}`
      : `could not get ${needed} ports in ${src}: got ${got} of the ${usable} that looked usable (${report.considered} considered)`;
  const lines = [head];
  const own = input.ownInSet ?? [];
  if (own.length > 0) lines.push(`  ${own.length} taken by this set's other ports: ${list(own, String)}`);
  if (x.ephemeral > 0) {
    lines.push(
      `  ${x.ephemeral} inside ${eph} and not reserved (${input.ephemeralInSource.map(formatRange).join(',')}): ` +
        `any outgoing connection may take them. Reserve them (${sysctlHint(input)}), use a band outside the range, or pass --allow-ephemeral`,
    );
  }
  if (x.privileged > 0) {
    lines.push(`  ${x.privileged} below net.ipv4.ip_unprivileged_port_start=${host.unprivilegedStart}: berth does not lease privileged ports`);
  }
  if (x.inUse.length > 0) lines.push(`  ${x.inUse.length} in use: ${list(x.inUse, (u) => describeInUse(u, input.isRoot))}`);
  if (x.leased.length > 0) lines.push(`  ${x.leased.length} leased: ${list(x.leased, describeLeased)} (see berth leases)`);
  if (x.bindFailed.length > 0) {
    lines.push(`  ${x.bindFailed.length} could not be bound: ${list(x.bindFailed, (b) => `${b.port}${b.protocol === 'udp' ? ' UDP' : ''} ${b.code}`)}`);
  }
  if (x.raced.length > 0) {
    lines.push(`  ${x.raced.length} lost to concurrent allocators: ${list(x.raced, (r) => `${r.port} (${r.reason})`)}`);
  }
  lines.push(block ? `  use a wider range, ask for a smaller block (--block), or free some of the ports above` : `  use a wider range, ask for fewer ` +
    `ports (--count), or free some of the ports above`);
  return lines.join('\n');
}
