import {
  closeSync,
  constants,
  fstatSync,
  linkSync,
  lstatSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { BerthError, EXIT } from '../errors.js';
import { processStartTime } from '../host/proc-stat.js';
import { leaseState, parseLeaseRecord, type LeaseState, type StartTimeOf } from './lease-record.js';
import type { Lease, LeaseRecord } from './types.js';

/*
 * One file per port, `<port>.lease`, in the per-namespace state directory.
 *
 * Creating: the complete JSON goes to a unique temp file, then link(temp, <port>.lease).
 * link() fails with EEXIST atomically, so exactly one creator wins and nobody ever sees a
 * half-written lease.
 *
 * Removing (reclaim of a stale lease, or release of our own): never unlink the shared
 * name directly. Between "I looked at it" and "I unlinked it" someone may have replaced
 * the file, and unlink(path) would then delete a live lease. Instead rename(path, unique)
 * moves whatever is there *now* to a name only we know; we then examine the moved file at
 * leisure (nobody else can touch it): if it is the inode we judged and it is still stale
 * (or still ours, for release) we unlink it. Otherwise we moved somebody's fresh lease and
 * put it back with link(unique, path), which again cannot overwrite anything.
 *
 * The one hole: while a fresh lease is moved aside, its port has no lease file, and a
 * third process may create one; our put-back then fails with EEXIST and two processes
 * each believe they lease the port. We neither unlink the third one's (it is live) nor
 * throw ours away: we retry the put-back for a while (the third process normally loses
 * its bind to the first one's hold and removes its lease at once), and failing that leave
 * the moved file in place and say so loudly. Two lease holders can still never both
 * *hold*: the allocator binds a listening socket on the wildcard address before it
 * returns a port, and re-checks afterwards that the lease file at the path is its own
 * (same inode and text), waiting out a put-back in progress. What remains is the hole
 * opening after that re-check for a holder that then lets go of its socket (`berth port`,
 * handoff `release`): it needs a reclaimer that judged the previous, stale file to be
 * descheduled between its check and its rename, and a third allocator to create a lease
 * inside the put-back window. Before the rename we re-check the inode to keep the first
 * window as small as it can be.
 *
 * "Ours" is inode and text together: once a file is unlinked, the filesystem may give
 * its inode number to the next lease created, which may be someone else's.
 */

export const LEASE_SUFFIX = '.lease';

export function leasePath(dir: string, port: number): string {
  return join(dir, `${port}${LEASE_SUFFIX}`);
}

/** Port of a "<port>.lease" file name; undefined for anything else (temp files, strays). */
export function portOfLeaseName(name: string): number | undefined {
  if (!name.endsWith(LEASE_SUFFIX)) return undefined;
  const digits = name.slice(0, -LEASE_SUFFIX.length);
  if (digits.length === 0 || digits.length > 5 || digits.charCodeAt(0) === 48) return undefined;
  for (let i = 0; i < digits.length; i++) {
    const c = digits.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  const p = Number(digits);
  return p >= 1 && p <= 65535 ? p : undefined;
}

const TEMP_KINDS = ['tmp', 'reclaim', 'release'] as const;
type TempKind = (typeof TEMP_KINDS)[number];

/*
 * Temp names need to be unique, not unpredictable: the directory is private to the user
 * (state-dir.ts). The pid keeps live processes apart, a counter keeps the calls of one
 * process apart, and 48 random bits keep a leftover of a dead process with the same pid
 * from colliding. Math.random rather than node:crypto, whose loading alone costs
 * `berth port` about 2 ms at startup.
 */
let tempSeq = 0;

/** pid + counter + random: unique across processes and across calls within one. */
function uniqueName(dir: string, kind: TempKind): string {
  const rnd = Math.floor(Math.random() * 0x1000000000000).toString(16).padStart(12, '0');
  return join(dir, `.${kind}-${process.pid}-${(tempSeq++).toString(36)}${rnd}`);
}

/** Promise-based sleep without loading node:timers/promises (startup cost; see uniqueName). */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException).code;
}

function ioError(path: string, what: string, e: unknown): BerthError {
  return new BerthError(
    EXIT.IOERR,
    `cannot ${what} lease file ${path}: ${code(e) ?? (e as Error).message}; check the lease directory ${dirname(path)} (free space, permissions) or set BERTH_STATE_DIR`,
    { path },
  );
}

export interface LeaseFile {
  path: string;
  ino: number;
  text: string;
  /** undefined: not a valid lease (garbage, reclaimable). */
  record?: LeaseRecord;
}

/**
 * The file's text, `size` bytes as fstat gave them (what readFileSync(fd) reads, without
 * its second fstat: leases are read several times per allocation).
 */
function readText(fd: number, size: number): string {
  const buf = Buffer.allocUnsafe(size);
  let len = 0;
  while (len < size) {
    const n = readSync(fd, buf, len, size - len, null);
    if (n === 0) break;
    len += n;
  }
  return buf.toString('utf8', 0, len);
}

/** Read a lease file and its inode from one open file description; undefined if it does not exist. */
export function readLeaseFile(path: string, port?: number): LeaseFile | undefined {
  let fd: number;
  try {
    // NOFOLLOW: a symlink here is garbage, never a pointer to follow. NONBLOCK: a planted FIFO must not hang us.
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if (code(e) === 'ENOENT') return undefined;
    if (code(e) === 'ELOOP') {
      try {
        return { path, ino: lstatSync(path).ino, text: '' };
      } catch (e2) {
        if (code(e2) === 'ENOENT') return undefined;
        throw ioError(path, 'examine', e2);
      }
    }
    throw ioError(path, 'read', e);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { path, ino: st.ino, text: '' };
    const text = readText(fd, st.size);
    const record = parseLeaseRecord(text, port ?? portOfLeaseName(basename(path)));
    return record === undefined ? { path, ino: st.ino, text } : { path, ino: st.ino, text, record };
  } finally {
    closeSync(fd);
  }
}

/**
 * Create `<port>.lease` holding `record`, atomically and complete. Returns its inode, or
 * undefined when a lease file for the port already exists.
 */
export function createLeaseFile(dir: string, record: LeaseRecord): { path: string; ino: number; text: string } | undefined {
  const path = leasePath(dir, record.port);
  const tmp = uniqueName(dir, 'tmp');
  const text = `${JSON.stringify(record)}\n`;
  let ino: number;
  let fd: number;
  try {
    fd = openSync(tmp, 'wx', 0o600);
  } catch (e) {
    throw ioError(tmp, 'create', e);
  }
  try {
    // No fsync: leases describe live processes, which a machine crash ends anyway.
    writeSync(fd, text);
    ino = fstatSync(fd).ino;
  } catch (e) {
    closeSync(fd);
    unlinkQuiet(tmp);
    throw ioError(tmp, 'write', e);
  }
  closeSync(fd);
  try {
    linkSync(tmp, path);
    return { path, ino, text };
  } catch (e) {
    if (code(e) === 'EEXIST') return undefined;
    throw ioError(path, 'create', e);
  } finally {
    unlinkQuiet(tmp);
  }
}

function unlinkQuiet(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

export interface LeaseStoreOptions {
  /** Clock, ms since epoch (tests move it). */
  now?: () => number;
  /** Process start times; default reads the real /proc (owners are real processes). */
  startTimeOf?: StartTimeOf;
  /** Where loud notes go; default stderr. */
  warn?: (message: string) => void;
  /** How long to keep retrying to put back a live lease moved aside by a race (ms). */
  putBackMs?: number;
}

const defaults = {
  now: () => Date.now(),
  startTimeOf: (pid: number) => processStartTime(pid),
  warn: (m: string) => void process.stderr.write(`berth: warning: ${m}\n`),
  putBackMs: 2000,
};

function resolved(o: LeaseStoreOptions = {}) {
  return {
    now: o.now ?? defaults.now,
    startTimeOf: o.startTimeOf ?? defaults.startTimeOf,
    warn: o.warn ?? defaults.warn,
    putBackMs: o.putBackMs ?? defaults.putBackMs,
  };
}

/** link() a moved-aside lease back to its name; retries while another lease occupies it. */
async function putBack(moved: string, path: string, o: ReturnType<typeof resolved>): Promise<boolean> {
  const deadline = Date.now() + o.putBackMs;
  for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
    try {
      linkSync(moved, path);
      unlinkQuiet(moved);
      return true;
    } catch (e) {
      if (code(e) !== 'EEXIST') throw ioError(path, 'restore', e);
    }
    if (Date.now() >= deadline) break;
    await sleep(delay);
  }
  o.warn(
    `a live lease was moved aside from ${path} by a reclaim race and another lease took its place before it could be put back; ` +
      `it is kept at ${moved}. Both lease holders cannot hold the port at once (the allocator binds it), but a service started ` +
      `with --handoff release by the first holder may find the port taken. Compare both files, then remove the stale one.`,
  );
  return false;
}

export type TakeResult = 'removed' | 'gone' | 'kept' | 'displaced';

/**
 * Remove the lease file at `path` only if it is still inode `ino` and `shouldRemove` holds
 * for the file as found after moving it aside (see the protocol at the top).
 * 'gone': nothing was there; 'kept': another file was there and was put back;
 * 'displaced': it could not be put back (left aside, warned).
 */
export async function takeAway(
  path: string,
  ino: number,
  kind: 'reclaim' | 'release',
  shouldRemove: (moved: LeaseFile) => boolean,
  opts: LeaseStoreOptions = {},
): Promise<TakeResult> {
  const o = resolved(opts);
  try {
    if (lstatSync(path).ino !== ino) return 'kept';
  } catch (e) {
    if (code(e) === 'ENOENT') return 'gone';
    throw ioError(path, 'examine', e);
  }
  const moved = uniqueName(dirname(path), kind);
  try {
    renameSync(path, moved);
  } catch (e) {
    if (code(e) === 'ENOENT') return 'gone';
    throw ioError(path, 'move', e);
  }
  const f = readLeaseFile(moved, portOfLeaseName(basename(path)));
  if (f === undefined) return 'gone'; // cannot happen: nobody else knows the name
  if (f.ino === ino && shouldRemove(f)) {
    unlinkQuiet(moved);
    return 'removed';
  }
  return (await putBack(moved, path, o)) ? 'kept' : 'displaced';
}

/** What makes a lease file ours: its inode and its exact text (see the top of this file). */
export interface LeaseIdentity {
  ino: number;
  text: string;
}

export type AcquireResult =
  | { ok: true; lease: Lease; id: LeaseIdentity; /** state of the lease we replaced, if any */ reclaimed?: LeaseState }
  | { ok: false; reason: 'leased' | 'raced'; holder?: LeaseRecord };

/**
 * Create the lease for record.port, reclaiming a stale or garbage one in the way.
 * Never removes a live lease. `ok: false, reason: 'leased'` names the live holder.
 */
export async function acquireLease(dir: string, record: LeaseRecord, opts: LeaseStoreOptions = {}): Promise<AcquireResult> {
  const o = resolved(opts);
  const path = leasePath(dir, record.port);
  let reclaimed: LeaseState | undefined;
  // Each round either creates, finds a live holder, or removes one stale file; a few
  // rounds bound the loop when others keep creating and abandoning leases.
  for (let round = 0; round < 4; round++) {
    // Look first: under contention most ports are taken, and reading is cheaper than
    // writing a temp file only to have link() refuse it. The planner skipped live leases
    // it saw, so usually nothing is there: lstat says so without the cost of a thrown
    // ENOENT (readLeaseFile would open the file).
    const seen = lstatSync(path, { throwIfNoEntry: false }) === undefined ? undefined : readLeaseFile(path, record.port);
    if (seen === undefined) {
      const made = createLeaseFile(dir, record);
      if (made === undefined) continue; // created by someone else just now: judge theirs
      const lease: Lease = { ...record, path };
      const id = { ino: made.ino, text: made.text };
      return reclaimed === undefined ? { ok: true, lease, id } : { ok: true, lease, id, reclaimed };
    }
    const state = leaseState(seen.record, o.now(), o.startTimeOf);
    if (state === 'live') return seen.record ? { ok: false, reason: 'leased', holder: seen.record } : { ok: false, reason: 'leased' };
    const r = await takeAway(path, seen.ino, 'reclaim', (f) => leaseState(f.record, o.now(), o.startTimeOf) !== 'live', opts);
    if (r === 'kept' || r === 'displaced') return { ok: false, reason: 'raced' };
    if (r === 'removed') reclaimed = state;
  }
  return { ok: false, reason: 'raced' };
}

/** Remove our own lease if it is still at its path. True when removed. */
export async function removeOwnLease(path: string, id: LeaseIdentity, opts: LeaseStoreOptions = {}): Promise<boolean> {
  return (await takeAway(path, id.ino, 'release', (f) => f.text === id.text, opts)) === 'removed';
}

/**
 * Is the lease file at `path` still ours? A reclaimer may have it moved aside for a
 * moment (see the protocol), so a miss is retried for up to `waitMs`: longer than a
 * put-back keeps trying, so a lease that is put back is always seen.
 */
export async function leaseStillOurs(path: string, id: LeaseIdentity, waitMs = defaults.putBackMs + 1000): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
    const f = readLeaseFile(path);
    if (f !== undefined && f.ino === id.ino && f.text === id.text) return true;
    if (Date.now() >= deadline) return false;
    await sleep(delay);
  }
}

export interface ListedLease extends Lease {
  ino: number;
  /** The file's text, for identity checks (see LeaseIdentity). */
  text: string;
  state: LeaseState;
  live: boolean;
}

export interface LeaseScan {
  leases: ListedLease[];
  /** Lease files that are not valid leases (reclaimable). */
  garbage: { path: string; port: number; ino: number }[];
}

/** All lease files of a directory with their liveness, ordered by port. */
export function scanLeaseDir(dir: string, opts: LeaseStoreOptions & { portFilter?: (port: number) => boolean } = {}): LeaseScan {
  const o = resolved(opts);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    if (code(e) === 'ENOENT') return { leases: [], garbage: [] };
    throw new BerthError(EXIT.IOERR, `cannot list lease directory ${dir}: ${code(e) ?? (e as Error).message}`, { path: dir });
  }
  const now = o.now();
  const scan: LeaseScan = { leases: [], garbage: [] };
  for (const name of names) {
    const port = portOfLeaseName(name);
    if (port === undefined || (opts.portFilter && !opts.portFilter(port))) continue;
    const path = join(dir, name);
    const f = readLeaseFile(path, port);
    if (f === undefined) continue;
    if (f.record === undefined) {
      scan.garbage.push({ path, port, ino: f.ino });
      continue;
    }
    const state = leaseState(f.record, now, o.startTimeOf);
    scan.leases.push({ ...f.record, path, ino: f.ino, text: f.text, state, live: state === 'live' });
  }
  scan.leases.sort((a, b) => a.port - b.port);
  scan.garbage.sort((a, b) => a.port - b.port);
  return scan;
}

/** Valid leases of a directory with liveness (garbage files are left out; see scanLeaseDir). */
export function listLeases(dir: string, opts: LeaseStoreOptions = {}): ListedLease[] {
  return scanLeaseDir(dir, opts).leases;
}

export interface ReleaseFilter {
  ports?: readonly number[];
  ownerPid?: number;
  jobId?: string;
  all?: boolean;
}

export interface ReleaseResult {
  /** Targeted leases removed. */
  released: ListedLease[];
  /** Stale or garbage lease files cleaned on the way. */
  cleaned: number;
}

function targeted(l: LeaseRecord, f: ReleaseFilter): boolean {
  if (f.all) return true;
  if (f.ports?.includes(l.port)) return true;
  if (f.ownerPid !== undefined && l.pid === f.ownerPid) return true;
  if (f.jobId !== undefined && l.slurmJobId === f.jobId) return true;
  return false;
}

/**
 * Remove the leases the caller targets (live or not: the caller asked) and clean stale
 * and garbage lease files, plus temp files of dead processes. Never removes a live lease
 * that was not targeted.
 */
export async function releaseLeasesIn(dir: string, filter: ReleaseFilter, opts: LeaseStoreOptions = {}): Promise<ReleaseResult> {
  const o = resolved(opts);
  const scan = scanLeaseDir(dir, opts);
  const result: ReleaseResult = { released: [], cleaned: 0 };
  for (const l of scan.leases) {
    if (targeted(l, filter)) {
      // Only the lease we listed: a replacement created since is not what was targeted.
      if ((await takeAway(l.path, l.ino, 'release', (f) => f.text === l.text, opts)) === 'removed') result.released.push(l);
    } else if (!l.live) {
      const r = await takeAway(l.path, l.ino, 'reclaim', (f) => leaseState(f.record, o.now(), o.startTimeOf) !== 'live', opts);
      if (r === 'removed') result.cleaned++;
    }
  }
  for (const g of scan.garbage) {
    const r = await takeAway(g.path, g.ino, 'reclaim', (f) => leaseState(f.record, o.now(), o.startTimeOf) !== 'live', opts);
    if (r === 'removed') result.cleaned++;
  }
  result.cleaned += cleanLeftovers(dir, o.now());
  return result;
}

/** Temp, reclaim and release files of processes that died mid-operation (older than a minute). */
export function cleanLeftovers(dir: string, now = Date.now(), startTimeOf: StartTimeOf = defaults.startTimeOf): number {
  let n = 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    if (name.charCodeAt(0) !== 46 /* . */) continue;
    const dash = name.indexOf('-');
    const kind = name.slice(1, dash);
    if (dash < 0 || !(TEMP_KINDS as readonly string[]).includes(kind)) continue;
    const pid = Number(name.slice(dash + 1, name.indexOf('-', dash + 1)));
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || startTimeOf(pid) !== undefined) continue;
    const path = join(dir, name);
    try {
      if (now - lstatSync(path).mtimeMs < 60_000) continue;
      unlinkSync(path);
      n++;
    } catch {
      // raced with another cleaner
    }
  }
  return n;
}
