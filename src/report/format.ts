// Wording shared by the text and HTML renderings, so both say the same thing the same way.
import { formatRange } from '../host/intervals.js';
import type { SocketOwner, SocketRow } from '../host/host-map.js';
import type { Band, Fix } from '../layout/layout-model.js';
import { locatePort } from './geometry.js';
import type { PortSpaceReport } from './port-space-report.js';
import { instanceCount } from '../layout/windows.js';
import { plural } from '../layout/check-text.js';
import { cleanText } from '../util/clean-text.js';
import { userText } from '../util/user-name.js';

export { list as formatRanges, plural } from '../layout/check-text.js';

export type ReportSocket = PortSpaceReport['sockets'][number];
export type ReportLease = PortSpaceReport['leases'][number];

/** A socket's state as the reports print it: TCP's own, "UDP UNCONN" / "UDP ESTAB" for UDP. */
export function stateText(r: Pick<SocketRow, 'protocol' | 'state'>): string {
  if (r.protocol !== 'udp') return r.state;
  return r.state === 'ESTABLISHED' ? 'UDP ESTAB' : 'UDP UNCONN';
}

/** Whether a socket has no peer to show: a TCP listener, an unconnected UDP socket. */
export function withoutPeer(r: Pick<SocketRow, 'protocol' | 'state'>): boolean {
  return r.state === 'LISTEN' || (r.protocol === 'udp' && r.state !== 'ESTABLISHED');
}

/** An argv as a reader would retype it: shell-quoted where needed, controls escaped. */
export function formatArgv(argv: readonly string[]): string {
  return argv.map((a) => (a === '' || /[^\w@%+=:,./-]/.test(a) ? `'${a.replace(/'/g, `'\\''`)}'` : a)).map(cleanText).join(' ');
}

function formatOwner(o: SocketOwner): string {
  return `pid ${o.pid} (${cleanText(o.comm) || '?'})`;
}

/** "pid N (comm)", several joined; kernel-held for inode 0; else whose it is, why its process is not named and how to see it. */
export function socketOwnerText(row: SocketRow & { owners?: SocketOwner[]; ownerHidden?: 'other-user' | 'pid-namespace' }): string {
  if (row.owners && row.owners.length > 0) return row.owners.map(formatOwner).join(', ');
  if (row.inode === 0) return 'none (kernel-held)';
  const who = cleanText(userText(row.uid));
  if (row.ownerHidden === 'pid-namespace') return `${who}, held by no process of this PID namespace (run berth outside it, on the host, to see which)`;
  if (row.ownerHidden === 'other-user') return `${who}, another user's process (run as root to see which)`;
  return who;
}

/** "vllm#3" (band and instance window) or "vllm", "" outside every band. */
export function placeText(port: number, bands: readonly Band[]): string {
  const at = locatePort(port, bands);
  if (!at) return '';
  return at.instance !== undefined ? `${cleanText(at.band.name)}#${at.instance}` : cleanText(at.band.name);
}

/** "1600 ports, window 100 = 16 instances"; "100 ports, window 30 = 3 instances + 10 spare ports" */
export function bandSizeText(b: Band): string {
  const size = `${b.hi - b.lo + 1} ports`;
  if (b.window === undefined || !(b.window > 0)) return size;
  // Whole windows only, as `berth doctor`'s findings and --instance count them.
  const n = instanceCount(b);
  const rest = b.hi - b.lo + 1 - n * b.window;
  return `${size}, window ${b.window} = ${plural(n, 'instance')}${rest > 0 ? ` + ${plural(rest, 'spare port')}` : ''}`;
}

/** "7000-8599 (1600 ports, window 100 = 16 instances)" */
export function bandText(b: Band): string {
  return `${formatRange(b)} (${bandSizeText(b)})`;
}

/** Address as it is written with a port: [::1]:7000, 127.0.0.1:7000. */
export function endpoint(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

/** Whole seconds as "1h 2m", "4m 10s", "12s". */
export function formatDuration(ms: number): string {
  let s = Math.round(Math.abs(ms) / 1000);
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (h > 0) return m > 0 ? `${h}h ${m}m` : `${h}h`;
  if (m > 0) return s > 0 ? `${m}m ${s}s` : `${m}m`;
  return `${s}s`;
}

/** Expiry relative to when the report was made (not to now: a saved report keeps its words). */
export function expiryText(lease: ReportLease, reportTime: number): string {
  if (lease.expiresAt === undefined) return lease.pid !== undefined ? 'while owner lives' : 'never';
  if (!Number.isFinite(lease.expiresAt)) return 'unknown';
  if (!Number.isFinite(reportTime)) return new Date(lease.expiresAt).toISOString();
  const d = lease.expiresAt - reportTime;
  return d >= 0 ? `in ${formatDuration(d)}` : `${formatDuration(d)} ago`;
}

export function leaseOwnerText(lease: ReportLease): string {
  return lease.pid !== undefined ? `pid ${lease.pid}` : 'none (expiry only)';
}

export function leaseJobText(lease: ReportLease): string {
  if (lease.slurmJobId === undefined) return '';
  return lease.slurmStepId !== undefined ? `${cleanText(lease.slurmJobId)}.${cleanText(lease.slurmStepId)}` : cleanText(lease.slurmJobId);
}

/** The text to copy for a fix: the sysctl command, or the band's new line in the layout's syntax (window kept) to paste over the old. */
export function fixCode(fix: Fix, bands: readonly Band[]): string {
  if (fix.kind === 'sysctl') return cleanText(fix.command);
  const win = bands.find((b) => b.name === fix.band)?.window;
  const w = win !== undefined && win > 0 ? `, window: ${win}` : '';
  return `${cleanText(fix.band)}: { range: ${formatRange(fix.range)}${w} }`;
}

/** "0-1023", or "none" when ip_unprivileged_port_start is 0 (anyone may bind any port). */
export function privilegedText(unprivilegedStart: number): string {
  return unprivilegedStart > 0 ? formatRange({ lo: 0, hi: unprivilegedStart - 1 }) : 'none';
}

const STATE_ORDER = [
  'LISTEN', 'ESTABLISHED', 'TIME_WAIT', 'CLOSE_WAIT', 'SYN_SENT', 'SYN_RECV', 'FIN_WAIT1', 'FIN_WAIT2', 'LAST_ACK', 'CLOSING', 'CLOSE',
  'UDP UNCONN', 'UDP ESTAB',
];

/** States in a fixed reading order (LISTEN first, UDP last), then any the kernel adds. */
export function orderedCounts(counts: Record<string, number>): [string, number][] {
  const keys = Object.keys(counts).sort((a, b) => {
    const ia = STATE_ORDER.indexOf(a);
    const ib = STATE_ORDER.indexOf(b);
    return (ia === -1 ? 99 : ia) - (ib === -1 ? 99 : ib) || a.localeCompare(b);
  });
  return keys.map((k) => [k, counts[k] ?? 0]);
}
