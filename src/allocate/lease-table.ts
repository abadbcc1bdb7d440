import { MAX_PARTS, NAME_BYTES, PREFIX } from './lease-protocol.js';
import { isPort, parsePayload, type ParsedRecord } from './lease-record.js';

/* A namespace's berth names from /proc/net/unix text, sorted into ports taken, allocators at work and whole records. Pure. */

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
    // Whole: every part 0…n-1 there (includes() sees a hole of the sparse array as undefined).
    if (rec.bad || rec.chunks.length !== rec.n || rec.chunks.includes(undefined)) continue;
    const info = parsePayload(rec.chunks.join(''));
    if (info) table.records.push({ ...info, id, inodes: rec.inodes });
  }
  return table;
}

/**
 * Port -> inode of its port name where the kernel's listing proves it, for acts (berth release). A
 * line forged by a newline inside another name lies within that name's 107 bytes, so it can never
 * be padded to 107: only padded port names count.
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
