import { capName, NAME_BYTES, PREFIX, randomId } from './lease-protocol.js';

/*
 * A lease record's payload (docs/leases.md): "key=value" fields joined by "/", values
 * percent-encoded, cut into parts that each fit one abstract name. Pure.
 */

const SAFE = /^[A-Za-z0-9._~:+,-]$/;

/** Percent-encoding of UTF-8 over the safe set. */
export function escapeValue(text: string): string {
  let out = '';
  for (const ch of text) {
    if (SAFE.test(ch)) out += ch;
    else for (const b of Buffer.from(ch, 'utf8')) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The text of an escaped value, or undefined when it is not one. */
export function unescapeValue(text: string): string | undefined {
  if (!/^(?:[A-Za-z0-9._~:+,-]|%[0-9A-F]{2})*$/.test(text)) return undefined;
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/** Ascending, disjoint runs of ports, lo <= hi: how records keep them (a claim of 1-65535 is one run, not 65535 ports). */
export interface PortRun {
  lo: number;
  hi: number;
}

/** What a lease record says (as written: its ports listed). Everything in it is a claim of whoever bound it. */
export interface RecordInfo {
  uid: number;
  /** The allocator's pid (in its own pid namespace). */
  pid: number;
  owner?: number;
  /** Inode of the PID namespace the owner pid (and the allocator's pid) belong to. */
  pidns?: number;
  expiresAt?: number;
  createdAt?: number;
  job?: string;
  step?: string;
  kind: 'single' | 'block';
  ports: number[];
  name?: string;
  /** Records of one allocation share it. */
  set?: string;
}

/** "20000-20015,20020": ascending ports as runs. */
export function formatPorts(ports: readonly number[]): string {
  const sorted = [...ports].sort((a, b) => a - b);
  const runs: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    runs.push(i === j ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return runs.join(',');
}

const PORT_TEXT = /^[1-9]\d{0,4}$/;
export const isPort = (p: number): boolean => p >= 1 && p <= 65535;

/** Runs of "20000-20015,20020", or undefined when malformed: anyone can bind a record claiming 1-65535, so never expanded. */
export function parsePorts(text: string): PortRun[] | undefined {
  const out: PortRun[] = [];
  for (const run of text.split(',')) {
    const [a, b, extra] = run.split('-');
    if (a === undefined || extra !== undefined || !PORT_TEXT.test(a) || (b !== undefined && !PORT_TEXT.test(b))) return undefined;
    const lo = Number(a);
    const hi = b === undefined ? lo : Number(b);
    if (!isPort(lo) || !isPort(hi) || hi < lo || (out.length > 0 && lo <= out[out.length - 1]!.hi)) return undefined;
    out.push({ lo, hi });
  }
  return out.length > 0 ? out : undefined;
}

/** The largest number a record field may hold (15 digits, exact in a double); readers refuse a record with a larger one. */
export const MAX_STAMP_MS = 999_999_999_999_999;

/** The record's payload; throws (a bug, not a user error: ttls are bounded where they are parsed) for a field readers would refuse. */
export function formatPayload(r: RecordInfo): string {
  for (const v of [r.uid, r.pid, r.owner, r.expiresAt, r.createdAt]) {
    if (v !== undefined && !(Number.isFinite(v) && v >= 0 && Math.round(v) <= MAX_STAMP_MS)) {
      throw new RangeError(`lease record field ${v} is outside 0…${MAX_STAMP_MS}: readers would refuse the record`);
    }
  }
  const f: string[] = [`uid=${r.uid}`, `pid=${r.pid}`];
  if (r.owner !== undefined) f.push(`owner=${r.owner}`);
  if (r.pidns !== undefined) f.push(`pidns=${r.pidns}`);
  if (r.expiresAt !== undefined) f.push(`exp=${Math.round(r.expiresAt)}`);
  if (r.createdAt !== undefined) f.push(`at=${Math.round(r.createdAt)}`);
  if (r.job !== undefined) f.push(`job=${escapeValue(r.job)}`);
  if (r.step !== undefined) f.push(`step=${escapeValue(r.step)}`);
  f.push(`kind=${r.kind}`, `ports=${formatPorts(r.ports)}`);
  if (r.name !== undefined) f.push(`name=${escapeValue(capName(r.name))}`);
  if (r.set !== undefined) f.push(`set=${escapeValue(r.set)}`);
  return f.join('/');
}

/** 0 … MAX_STAMP_MS. */
const UINT = /^(?:0|[1-9]\d{0,14})$/;

/** A record as read: its ports as runs. */
export type ParsedRecord = Omit<RecordInfo, 'ports'> & { ports: PortRun[] };

/** The record of a payload, or undefined when any field is malformed or a needed one is missing. */
export function parsePayload(text: string): ParsedRecord | undefined {
  const fields = new Map<string, string>();
  for (const item of text.split('/')) {
    const eq = item.indexOf('=');
    if (eq <= 0) return undefined;
    const key = item.slice(0, eq);
    if (fields.has(key)) return undefined;
    fields.set(key, item.slice(eq + 1));
  }
  const num = (k: string): number | undefined | null => {
    const v = fields.get(k);
    if (v === undefined) return undefined;
    return UINT.test(v) ? Number(v) : null;
  };
  const uid = num('uid');
  const pid = num('pid');
  const owner = num('owner');
  const exp = num('exp');
  const at = num('at');
  const pidns = num('pidns');
  if (uid == null || pid == null || owner === null || exp === null || at === null || pidns === null) return undefined;
  const kind = fields.get('kind');
  if (kind !== 'single' && kind !== 'block') return undefined;
  const ports = parsePorts(fields.get('ports') ?? '');
  if (ports === undefined) return undefined;
  const r: ParsedRecord = { uid, pid, kind, ports };
  if (owner !== undefined) r.owner = owner;
  if (pidns !== undefined) r.pidns = pidns;
  if (exp !== undefined) r.expiresAt = exp;
  if (at !== undefined) r.createdAt = at;
  for (const k of ['job', 'step', 'name', 'set'] as const) {
    const v = fields.get(k);
    if (v === undefined) continue;
    const t = unescapeValue(v);
    if (t === undefined) return undefined;
    if (k === 'name') r.name = capName(t);
    else r[k] = capName(t, 32);
  }
  return r;
}

/** The names of one record: its payload cut into parts that fit NAME_BYTES. */
export function recordNames(info: RecordInfo, id = randomId(10)): string[] {
  const payload = formatPayload(info);
  // "berth/v1/r/<id>/<i>/<n>/": i and n take at most as many digits as n has.
  const parts: string[] = [];
  for (let size = 1; ; size++) {
    const head = `${PREFIX}r/${id}/`.length + 2 * String(size).length + 2;
    const room = NAME_BYTES - head;
    const n = Math.ceil(payload.length / room);
    if (n > size && String(n).length > String(size).length) continue;
    for (let i = 0; i < n; i++) parts.push(`${PREFIX}r/${id}/${i}/${n}/${payload.slice(i * room, (i + 1) * room)}`);
    return parts;
  }
}
