import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BerthError, EXIT } from '../errors.js';
import { formatRange, normalizeRanges } from './intervals.js';
import { allDigits } from './proc-read.js';
import type { HostSysctls, PortRange } from './host-map.js';

const RANGE_FILE = 'ip_local_port_range';
const RESERVED_FILE = 'ip_local_reserved_ports';
const UNPRIV_FILE = 'ip_unprivileged_port_start';

/** Where the three sysctls live under a /proc root. */
export function sysctlDir(procRoot = '/proc'): string {
  return join(procRoot, 'sys', 'net', 'ipv4');
}

function bad(file: string, text: string, why: string): BerthError {
  const shown = JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
  return new BerthError(EXIT.DATAERR, `${file}: ${why} (read ${shown})`, { file, text });
}

/** Strict decimal port 0..65535; undefined otherwise. Number() alone would accept "0x10", " 1", "1e3". */
function toPort(s: string): number | undefined {
  if (s.length > 5 || !allDigits(s)) return undefined;
  const n = Number(s);
  return n <= 65535 ? n : undefined;
}

/** net.ipv4.ip_local_port_range: two numbers separated by whitespace, e.g. "32768\t60999\n". */
export function parsePortRange(text: string, file = `net.ipv4.${RANGE_FILE}`): PortRange {
  const parts = text.trim().split(/\s+/);
  if (parts.length !== 2) throw bad(file, text, 'expected two port numbers "LO HI"');
  const lo = toPort(parts[0]!);
  const hi = toPort(parts[1]!);
  if (lo === undefined || hi === undefined) throw bad(file, text, 'ports must be whole numbers 0-65535');
  if (lo > hi) throw bad(file, text, `low end ${lo} is above high end ${hi}`);
  return { lo, hi };
}

/** net.ipv4.ip_local_reserved_ports: "8000,9000-9100" or empty; result is sorted and merged. */
export function parseReservedPorts(text: string, file = `net.ipv4.${RESERVED_FILE}`): PortRange[] {
  const body = text.trim();
  if (body === '') return [];
  const out: PortRange[] = [];
  for (const raw of body.split(',')) {
    const item = raw.trim();
    const dash = item.indexOf('-');
    if (dash < 0) {
      const p = toPort(item);
      if (p === undefined) throw bad(file, text, `"${item}" is not a port number 0-65535`);
      out.push({ lo: p, hi: p });
      continue;
    }
    const lo = toPort(item.slice(0, dash).trim());
    const hi = toPort(item.slice(dash + 1).trim());
    if (lo === undefined || hi === undefined) throw bad(file, text, `"${item}" is not a range LO-HI of ports 0-65535`);
    if (lo > hi) throw bad(file, text, `range "${item}" has its low end above its high end`);
    out.push({ lo, hi });
  }
  return normalizeRanges(out);
}

/** Back to the syntax `sysctl -w net.ipv4.ip_local_reserved_ports=…` accepts. */
export function formatReservedPorts(ranges: readonly PortRange[]): string {
  return normalizeRanges(ranges).map(formatRange).join(',');
}

/** net.ipv4.ip_unprivileged_port_start: one number, e.g. "1024\n". */
export function parseUnprivilegedStart(text: string, file = `net.ipv4.${UNPRIV_FILE}`): number {
  const p = toPort(text.trim());
  if (p === undefined) throw bad(file, text, 'expected one port number 0-65535');
  return p;
}

function readOptional(path: string): string | undefined {
  try {
    return readFileSync(path, 'latin1');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new BerthError(EXIT.IOERR, `cannot read ${path}: ${(e as Error).message}`);
  }
}

/** The three sysctls: the port range must exist; older kernels lack ip_unprivileged_port_start (1024), containers may hide the reserved list. */
export function readSysctls(procRoot = '/proc'): HostSysctls {
  const dir = sysctlDir(procRoot);
  const rangePath = join(dir, RANGE_FILE);
  const rangeText = readOptional(rangePath);
  if (rangeText === undefined) {
    throw new BerthError(EXIT.IOERR, `cannot read ${rangePath}: missing (is ${procRoot} a Linux /proc?)`);
  }
  const reservedPath = join(dir, RESERVED_FILE);
  const reservedText = readOptional(reservedPath);
  const unprivPath = join(dir, UNPRIV_FILE);
  const unprivText = readOptional(unprivPath);
  return {
    ephemeral: parsePortRange(rangeText, rangePath),
    reserved: reservedText === undefined ? [] : parseReservedPorts(reservedText, reservedPath),
    unprivilegedStart: unprivText === undefined ? 1024 : parseUnprivilegedStart(unprivText, unprivPath),
  };
}
