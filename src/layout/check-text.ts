import { formatRange, normalizeRanges, rangeSize } from '../host/intervals.js';
import type { PortRange } from '../host/host-map.js';
import type { Band, Finding, Severity } from './layout-model.js';

/* The words of berth doctor's audit (check.ts). */

export const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
export const list = (ranges: readonly PortRange[]) => (ranges.length === 0 ? 'none' : ranges.map(formatRange).join(','));
export const sum = (ranges: readonly PortRange[]) => ranges.reduce((n, r) => n + rangeSize(r), 0);
export const quoteNames = (bands: readonly Band[]) => bands.map((b) => `"${b.name}"`).join(', ');

export function reservedPortsCommand(ranges: readonly PortRange[]): string {
  return `sysctl -w net.ipv4.ip_local_reserved_ports=${list(normalizeRanges(ranges))}`;
}

/** "instances 8-11, 14 of 16 are exposed" from the exposed instance numbers. */
export function instancesText(exposed: number[], count: number): string {
  if (exposed.length === 0) return 'no instance window is exposed, only ports past the last window';
  if (exposed.length === count) return count === 1 ? 'its only instance is exposed' : `all ${count} instances are exposed`;
  const runs: string[] = [];
  let start = exposed[0]!;
  let prev = start;
  for (const i of [...exposed.slice(1), -1]) {
    if (i === prev + 1) {
      prev = i;
      continue;
    }
    runs.push(start === prev ? String(start) : `${start}-${prev}`);
    start = prev = i;
  }
  const which = exposed.length === 1 ? 'instance' : 'instances';
  return `${which} ${runs.join(', ')} of ${count} ${exposed.length === 1 ? 'is' : 'are'} exposed`;
}

export function summarizeFindings(findings: readonly Finding[]): { errors: number; warnings: number; infos: number } {
  const n = (s: Severity) => findings.filter((f) => f.severity === s).length;
  return { errors: n('error'), warnings: n('warning'), infos: n('info') };
}
