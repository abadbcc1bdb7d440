import { BerthError, EXIT } from '../errors.js';
import type { PortRange } from '../host/host-map.js';

/* Parsers of Slurm's variables: each takes the name, so a bad value is "NAME=value: why" (exit 65), naming what to fix. */

export function badVariable(name: string, value: string, why: string): BerthError {
  return new BerthError(EXIT.DATAERR, `${name}=${JSON.stringify(value)}: ${why}`, { variable: name, value });
}

const DIGITS = /^[0-9]{1,15}$/;

/** A whole number ≥ 0 (Slurm's ids and counts). */
export function parseUint(name: string, value: string): number {
  const t = value.trim();
  if (t === '') throw badVariable(name, value, 'is empty; unset it or give a whole number');
  if (!DIGITS.test(t)) throw badVariable(name, value, 'is not a whole number ≥ 0');
  return Number(t);
}

/** A job or step id: checked to be numeric, kept as text. */
export function parseIdText(name: string, value: string): string {
  return String(parseUint(name, value));
}

/** "0,1,3" or "0-2,5" into distinct whole numbers, in the order given. */
export function parseIndexList(name: string, value: string): number[] {
  if (value.trim() === '') throw badVariable(name, value, 'is empty; unset it or list indices such as 0,1');
  const out: number[] = [];
  const seen = new Set<number>();
  for (const raw of value.split(',')) {
    const part = raw.trim();
    if (part === '') throw badVariable(name, value, 'has an empty entry (",,", or a leading or trailing comma)');
    const dash = part.indexOf('-', 1);
    const lo = dash < 0 ? part : part.slice(0, dash);
    const hi = dash < 0 ? part : part.slice(dash + 1);
    if (!DIGITS.test(lo) || !DIGITS.test(hi)) throw badVariable(name, value, `entry ${JSON.stringify(part)} is not an index (a whole number ≥ 0, or LO-HI)`);
    if (Number(lo) > Number(hi)) throw badVariable(name, value, `range ${part} runs backwards`);
    if (Number(hi) - Number(lo) >= 65536) throw badVariable(name, value, `range ${part} is implausibly long`);
    for (let n = Number(lo); n <= Number(hi); n++) {
      if (seen.has(n)) throw badVariable(name, value, `lists ${n} twice`);
      seen.add(n);
      out.push(n);
    }
  }
  return out;
}

/** Comma-separated distinct entries as written (CUDA_VISIBLE_DEVICES may hold GPU UUIDs or MIG ids). */
export function parseEntryList(name: string, value: string): string[] {
  if (value.trim() === '') throw badVariable(name, value, 'is empty; unset it or list the devices, such as 0,1');
  const out: string[] = [];
  for (const raw of value.split(',')) {
    const e = raw.trim();
    if (e === '') throw badVariable(name, value, 'has an empty entry (",,", or a leading or trailing comma)');
    if (out.includes(e)) throw badVariable(name, value, `lists ${e} twice`);
    out.push(e);
  }
  return out;
}

/** SLURM_STEP_RESV_PORTS: "12000-12003" or "12998-12999,12000": TCP ports, as ranges. */
export function parsePortRanges(name: string, value: string): PortRange[] {
  const ports = parseIndexList(name, value);
  for (const p of ports) if (p < 1 || p > 65535) throw badVariable(name, value, `port ${p} is not a TCP port (1-65535)`);
  // Kept in Slurm's order (it may wrap around its port range), merged where consecutive.
  const ranges: PortRange[] = [];
  for (const p of ports) {
    const last = ranges[ranges.length - 1];
    if (last && p === last.hi + 1) last.hi = p;
    else ranges.push({ lo: p, hi: p });
  }
  return ranges;
}

/** SLURM_TASKS_PER_NODE: "2(x3),1" → [2, 2, 2, 1]. */
export function parseTasksPerNode(name: string, value: string): number[] {
  if (value.trim() === '') throw badVariable(name, value, 'is empty');
  const out: number[] = [];
  for (const raw of value.split(',')) {
    const part = raw.trim();
    const m = /^([0-9]{1,9})(?:\(x([0-9]{1,9})\))?$/.exec(part);
    if (!m) throw badVariable(name, value, `entry ${JSON.stringify(part)} is not N or N(xCOUNT)`);
    const times = m[2] === undefined ? 1 : Number(m[2]);
    if (times < 1 || out.length + times > 1_000_000) throw badVariable(name, value, `entry ${JSON.stringify(part)} has a bad repeat count`);
    for (let i = 0; i < times; i++) out.push(Number(m[1]));
  }
  return out;
}
