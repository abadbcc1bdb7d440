import { describeAssigned, type AssignedPorts } from '../allocate/port-set.js';
import { formatRange } from '../host/intervals.js';
import type { PortRange } from '../host/host-map.js';
import type { AuditFinding, StrayRule } from './launch-api.js';

/*
 * The listener audit, pure: which LISTEN (and bound, unconnected UDP) sockets of the service's
 * tree are outside its port set (a port of the set covers both protocols), and what to say. A
 * port outside it is leased by nobody, so another allocator may hand it out; inside the
 * unreserved ephemeral range any outgoing connection may take it before the next restart.
 * The I/O is in tree-listeners.ts, the rhythm in supervise.ts.
 */

/** A LISTEN socket (or an unconnected UDP socket) held by a member of the service's tree. */
export interface TreeListener {
  port: number;
  protocol?: 'udp';
  address: string;
  pid?: number;
  command?: string;
}

export interface AuditInput {
  /** The service, as messages name it. */
  name: string;
  set: readonly AssignedPorts[];
  listeners: readonly TreeListener[];
  /** The host's unreserved ephemeral range (ip_local_port_range less ip_local_reserved_ports). */
  ephemeral: readonly PortRange[];
  /** Ports reported before: each is reported once. */
  reported: ReadonlySet<number>;
  /** How to add one port in the caller's terms, e.g. "--ports …,NAME, then {ports.NAME} in its command". */
  portHint?: string;
}

/** Every port of the set: singles and every port of every block. */
export function setPorts(set: readonly AssignedPorts[]): Set<number> {
  const all = new Set<number>();
  for (const a of set) for (const p of a.ports) all.add(p);
  return all;
}

/** "http 20000, dist 20001-20032". */
export function describeSet(set: readonly AssignedPorts[]): string {
  return set.map((a) => `${a.name} ${describeAssigned(a)}`).join(', ');
}

function rangeOf(port: number, ranges: readonly PortRange[]): PortRange | undefined {
  return ranges.find((r) => port >= r.lo && port <= r.hi);
}

/**
 * The listeners outside the set not reported before, one finding per port (lowest first).
 * Give TCP and UDP listeners in separate calls (each with its own `reported`): a finding is
 * one port of one protocol.
 */
export function auditListeners(i: AuditInput): AuditFinding[] {
  const inSet = setPorts(i.set);
  const byPort = new Map<number, TreeListener>();
  for (const l of i.listeners) {
    if (inSet.has(l.port) || i.reported.has(l.port)) continue;
    // v4 and v6 sockets on one port are one finding; keep the one with a known holder.
    const had = byPort.get(l.port);
    if (had === undefined || (had.pid === undefined && l.pid !== undefined)) byPort.set(l.port, l);
  }
  // One port outside the set wants a port of its own, not a block.
  const hint = i.portHint ?? '--ports …,NAME, then {ports.NAME} in its command';
  const findings: AuditFinding[] = [];
  for (const port of [...byPort.keys()].sort((a, b) => a - b)) {
    const l = byPort.get(port)!;
    const eph = rangeOf(port, i.ephemeral);
    const head = outside(i.name, l.protocol === 'udp' ? `UDP ${port}` : String(port), i.set);
    const why =
      eph !== undefined
        ? `${port} is inside the unreserved ephemeral range ${formatRange(eph)}, where any outgoing connection may take it`
        : `nothing leases ${port} for it, so another allocator may hand it out`;
    const message = `${head}; ${why}: declare a port for it (${hint}) and pass that to the program's flag for it`;
    const f: AuditFinding = { port, address: l.address, ephemeral: eph !== undefined, message, ...(l.protocol === 'udp' ? { protocol: 'udp' as const } : {}) };
    if (l.pid !== undefined) f.pid = l.pid;
    if (l.command !== undefined) f.command = l.command;
    findings.push(f);
  }
  return findings;
}

/** "api listens on 8000 outside its ports (http 20000)", or for a service without ports "… but has no port". */
function outside(name: string, what: string, set: readonly AssignedPorts[]): string {
  return set.length === 0
    ? `${name} listens on ${what} but has no port (none was asked for it)`
    : `${name} listens on ${what} outside its ports (${describeSet(set)})`;
}

/** Whether a finding is one the service said to expect (LaunchOptions.strays). */
export function isAcknowledged(f: AuditFinding, rules: readonly StrayRule[] | undefined): boolean {
  return (rules ?? []).some((r) => r.kind === 'all' || (r.kind === 'ephemeral' ? f.ephemeral : f.port >= r.lo && f.port <= r.hi));
}

/** "39711, 40123 and 41235" */
export function portList(ports: readonly number[]): string {
  return ports.length === 1 ? String(ports[0]) : `${ports.slice(0, -1).join(', ')} and ${ports[ports.length - 1]}`;
}

/**
 * What the console says about findings of one audit pass: a single finding's own message,
 * or for several (a Jupyter kernel's six ZMQ ports) one message naming every port once
 * instead of a line each. `strayHint` is how to acknowledge strays the program picks itself.
 */
export function auditWarning(
  name: string,
  set: readonly AssignedPorts[],
  found: readonly AuditFinding[],
  ephemeral: readonly PortRange[],
  hints: { block: string; strays?: string },
): string {
  const strays = hints.strays ? `; if the program picks them itself and cannot be told which, acknowledge them (${hints.strays})` : '';
  if (found.length === 1) return found[0]!.message + (found[0]!.ephemeral ? strays : '');
  const udp = found.every((f) => f.protocol === 'udp') ? 'UDP ' : '';
  const eph = found.filter((f) => f.ephemeral).map((f) => f.port);
  const other = found.filter((f) => !f.ephemeral).map((f) => f.port);
  const parts: string[] = [];
  if (eph.length > 0) {
    const ranges = [...new Set(eph.map((p) => formatRange(rangeOf(p, ephemeral)!)))].join(', ');
    parts.push(`${portList(eph)} inside the unreserved ephemeral range ${ranges}, where any outgoing connection may take them`);
  }
  if (other.length > 0) parts.push(`${portList(other)} leased by nothing, so another allocator may hand ${other.length === 1 ? 'it' : 'them'} out`);
  return `${outside(name, `${found.length} ${udp}ports`, set)}: ${parts.join('; ')}: put them in a block (${hints.block}) or set the program's flags for ` +
    `them${eph.length > 0 ? strays : ''}`;
}

/** The deadline's "it listens on 8000 instead" part, or undefined when the tree listens nowhere but `port`. */
export function listensElsewhere(listeners: readonly TreeListener[], port: number): string | undefined {
  const other = [...new Set(listeners.map((l) => l.port).filter((p) => p !== port))].sort((a, b) => a - b);
  if (other.length === 0) return undefined;
  return `it listens on ${portList(other)} instead (is the port passed to it? {port} in its command, or $PORT)`;
}
