/*
 * The lease protocol, version 1, as names in the network namespace's abstract Unix socket
 * space (docs/leases.md is the specification; keep the two in step). Pure: formatting and
 * parsing only, the sockets are lease-domain.ts's.
 *
 * Every name is the 107 bytes of sun_path after its leading NUL: the text below, then NUL
 * bytes up to the end (Node.js binds abstract names that way, so every implementation must,
 * or its names are different names). /proc/net/unix and `ss -xl` print each NUL as "@".
 *
 *   berth/v1/p/<port>                        the port's lease: exclusive, bound atomically
 *   berth/v1/a/<uid>/<pid>/<lo>-<hi>/<rand>  an allocator at work in ports lo-hi
 *   berth/v1/r/<id>/<i>/<n>/<chunk>          part i of n of a lease record
 *
 * A record's payload (its chunks joined in order) is "key=value" fields joined by "/":
 * uid, pid (allocator), owner, pidns, exp (ms since epoch), at (ms), job, step, kind (single or
 * block), ports ("20000-20015,20020"), name, set. Values are percent-encoded UTF-8 over
 * [A-Za-z0-9._~:+,-] ("@" never appears unescaped: it is how NUL padding prints).
 *
 * Names are data, not trust: any local user can bind any name. A malformed name is
 * ignored; a port name of any shape that names a port makes that port taken.
 */

export const PREFIX = 'berth/v1/';
/** Bytes of an abstract name after its leading NUL (sizeof sun_path - 1). */
export const NAME_BYTES = 107;
/** Longest lease name stored (a stack's "file:service/replica/port" included); longer ones are cut. */
export const STORED_NAME_CHARS = 128;
/** Longest name a user may give (--name, a --ports entry): longer ones are refused. */
export const USER_NAME_CHARS = 64;
/** Records longer than this many parts are not read (a block is one range: one part). */
export const MAX_PARTS = 999;

export function portName(port: number): string {
  return `${PREFIX}p/${port}`;
}

/** Random [0-9a-z] text: names only need to differ from a live one (a clash is retried). */
export function randomId(chars: number): string {
  let s = '';
  while (s.length < chars) s += Math.floor(Math.random() * 36 ** 6).toString(36).padStart(6, '0');
  return s.slice(0, chars);
}

export function allocatorName(uid: number, pid: number, lo: number, hi: number, rand = randomId(6)): string {
  return `${PREFIX}a/${uid}/${pid}/${lo}-${hi}/${rand}`;
}

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

/** A name cut to `max` characters (whole code points), with "…" when cut. */
export function capName(name: string, max = STORED_NAME_CHARS): string {
  const cps = [...name];
  return cps.length <= max ? name : `${cps.slice(0, max - 1).join('')}…`;
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
const isPort = (p: number) => p >= 1 && p <= 65535;

/**
 * Runs of "20000-20015,20020", ascending and disjoint, or undefined when malformed. Kept as
 * runs: anyone can bind a record claiming 1-65535, and thousands of them must cost what their
 * text costs, not 65535 numbers each.
 */
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

/** How many ports some runs hold. */
export function runsSize(runs: readonly PortRun[]): number {
  let n = 0;
  for (const r of runs) n += r.hi - r.lo + 1;
  return n;
}

/**
 * The largest number a record field may hold (15 digits: every such number is exact in a
 * double). Readers refuse a record with a larger one, so writers never write one: an
 * expiry is bounded at parse time (util/duration.ts MAX_TTL_MS) far below it.
 */
export const MAX_STAMP_MS = 999_999_999_999_999;

/** The record's payload; throws (a bug, not a user error: ttls are bounded where they are parsed) for a field readers would refuse. */
export function formatPayload(r: RecordInfo): string {
  for (const v of [r.uid, r.pid, r.owner, r.expiresAt, r.createdAt]) {
    if (v !== undefined && !(Number.isFinite(v) && v >= 0 && Math.round(v) <= MAX_STAMP_MS)) throw new RangeError(`lease record field ${v} is outside 0…${MAX_STAMP_MS}: readers would refuse the record`);
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
    else if (k === 'job' || k === 'step') r[k] = capName(t, 32);
    else r.set = capName(t, 32);
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

/** One berth name as /proc/net/unix lists it. */
export interface ListedName {
  inode: number;
  /** The name without its NUL padding. */
  name: string;
  /** Padded to the whole sun_path as the protocol says. */
  padded: boolean;
}

export interface AllocatorClaim {
  uid: number;
  pid: number;
  lo: number;
  hi: number;
  inode: number;
}

export type ListedRecord = ParsedRecord & {
  id: string;
  inodes: number[];
};

/** Every berth name of a namespace, sorted out. */
export interface LeaseTable {
  /** Port -> inodes of its port names (more than one only for forged or unpadded twins). */
  ports: Map<number, number[]>;
  allocators: AllocatorClaim[];
  records: ListedRecord[];
}

const LINE = /^[0-9a-f]+: [0-9A-F]{8} [0-9A-F]{8} [0-9A-F]{8} [0-9A-F]{4} [0-9A-F]{2} +(\d+) @(.*)$/;
const MARK = `@${PREFIX}`;

/**
 * berth's names in /proc/net/unix text. A name with a newline can add lines of its own
 * making: they can only claim ports (making berth skip them) or label them, which anyone
 * can do by binding a name anyway.
 */
export function listNames(text: string): ListedName[] {
  const out: ListedName[] = [];
  let at = text.indexOf(MARK);
  while (at >= 0) {
    const start = text.lastIndexOf('\n', at) + 1;
    let end = text.indexOf('\n', at);
    if (end < 0) end = text.length;
    const m = LINE.exec(text.slice(start, end));
    if (m) {
      const path = m[2]!;
      let cut = path.length;
      while (cut > 0 && path.charCodeAt(cut - 1) === 64 /* @ */) cut--;
      out.push({ inode: Number(m[1]), name: path.slice(0, cut), padded: path.length === NAME_BYTES });
    }
    at = text.indexOf(MARK, end);
  }
  return out;
}

const PORT_NAME = /^berth\/v1\/p\/([1-9]\d{0,4})$/;
const ALLOC_NAME = /^berth\/v1\/a\/(\d{1,10})\/(\d{1,10})\/([1-9]\d{0,4})-([1-9]\d{0,4})\/[0-9a-z]{1,16}$/;
const PART_NAME = /^berth\/v1\/r\/([0-9a-z]{1,16})\/(0|[1-9]\d{0,2})\/([1-9]\d{0,2})\/(.*)$/s;

/** The table of a namespace's names: ports taken, allocators at work, complete records. */
export function leaseTable(names: readonly ListedName[]): LeaseTable {
  const table: LeaseTable = { ports: new Map(), allocators: [], records: [] };
  const parts = new Map<string, { n: number; chunks: (string | undefined)[]; inodes: number[]; bad: boolean }>();
  for (const l of names) {
    const p = PORT_NAME.exec(l.name);
    if (p) {
      const port = Number(p[1]);
      if (!isPort(port)) continue;
      const list = table.ports.get(port);
      if (list) list.push(l.inode);
      else table.ports.set(port, [l.inode]);
      continue;
    }
    if (!l.padded) continue;
    const a = ALLOC_NAME.exec(l.name);
    if (a) {
      const lo = Number(a[3]);
      const hi = Number(a[4]);
      if (isPort(lo) && isPort(hi) && lo <= hi) table.allocators.push({ uid: Number(a[1]), pid: Number(a[2]), lo, hi, inode: l.inode });
      continue;
    }
    const r = PART_NAME.exec(l.name);
    if (!r) continue;
    const i = Number(r[2]);
    const n = Number(r[3]);
    if (i >= n || n > MAX_PARTS) continue;
    let rec = parts.get(r[1]!);
    if (!rec) parts.set(r[1]!, (rec = { n, chunks: [], inodes: [], bad: false }));
    // Two parts with one place, or disagreeing counts: not a record anyone can trust.
    if (rec.n !== n || rec.chunks[i] !== undefined) rec.bad = true;
    rec.chunks[i] = r[4]!;
    rec.inodes.push(l.inode);
  }
  for (const [id, rec] of parts) {
    if (rec.bad) continue;
    let payload = '';
    let whole = true;
    for (let i = 0; i < rec.n && whole; i++) {
      const c = rec.chunks[i];
      if (c === undefined) whole = false;
      else payload += c;
    }
    if (!whole) continue;
    const info = parsePayload(payload);
    if (info) table.records.push({ ...info, id, inodes: rec.inodes });
  }
  return table;
}

/**
 * Port -> inode of its port name, only where the kernel's listing proves it, for acts
 * (berth release) rather than for skipping ports. A line forged by a newline inside another
 * name lies within that name's 107 bytes, so its own name can never be padded to 107: only
 * padded port names count (a forged line repeating a real socket's inode under another port
 * proves nothing, and takes nothing from the real line).
 */
export function provenPortInodes(names: readonly ListedName[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const l of names) {
    const p = PORT_NAME.exec(l.name);
    if (!p || !l.padded) continue;
    const port = Number(p[1]);
    if (isPort(port)) out.set(port, l.inode);
  }
  return out;
}
