import type { SocketRow } from '../host/host-map.js';

/*
 * Which address berth connects to. Never "localhost": resolvers map it to ::1 on one host
 * and 127.0.0.1 on another, and a service listening on only one of them then looks dead.
 * A name that needs resolving is the user's explicit choice; the loopback cases are decided
 * from what the service actually listens on.
 */

const WILDCARDS = new Set(['', '0.0.0.0', '::', '*']);

export function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

export function isLoopbackName(host: string): boolean {
  const h = stripBrackets(host).toLowerCase();
  return h === 'localhost' || h === 'localhost.localdomain' || h === 'ip6-localhost';
}

/** A loopback address that reaches a socket listening on `row`'s local address. */
function reachFor(row: SocketRow, dualStack: boolean): string {
  const a = row.localAddress;
  if (a.startsWith('::ffff:')) return a.slice(7) === '0.0.0.0' ? '127.0.0.1' : a.slice(7);
  if (row.family === 4) return a === '0.0.0.0' ? '127.0.0.1' : a;
  // A [::] listener takes IPv4 too unless it set IPV6_V6ONLY, which the table does not show.
  if (a === '::') return dualStack ? '127.0.0.1' : '::1';
  return a;
}

/**
 * The address to probe and print. `requested` is the host of an http spec or --bind;
 * `listening` the service's LISTEN rows on the port (empty when not known yet);
 * `dualStack` says a [::] listener also takes IPv4 (true for berth's own fd-handoff socket).
 */
export function chooseProbeHost(requested: string | undefined, listening: readonly SocketRow[], dualStack = false): string {
  const req = requested === undefined ? undefined : stripBrackets(requested);
  if (req !== undefined && !WILDCARDS.has(req) && !isLoopbackName(req)) return req;
  const wantV6 = req !== undefined && (req === '::' || req.toLowerCase() === 'ip6-localhost');
  const candidates = listening.map((r) => reachFor(r, dualStack && !wantV6));
  // Prefer IPv4 loopback: it is what users type and what every stack supports.
  if (!wantV6) return candidates.find((h) => !h.includes(':')) ?? candidates[0] ?? '127.0.0.1';
  return candidates.find((h) => h.includes(':')) ?? '::1';
}

/** "127.0.0.1:8000", "[::1]:8000" */
export function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
