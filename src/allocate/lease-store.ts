import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  linkSync,
  lstatSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmdirSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { BerthError, EXIT } from '../errors.js';
import { processStartTime } from '../host/proc-stat.js';
import { shownPath } from '../util/shared-dir.js';
import { isBlocking, leaseState, parseLeaseRecord, type LeaseState, type StartTimeOf } from './lease-record.js';
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
 *
 * Shared by all users (state-dir.ts): the directory is sticky, so rename() of another
 * user's file fails with EPERM. Such a file that is stale or garbage is left alone and its
 * port is not handed out ('foreign'); root may remove it, or it expires. Nothing found here
 * is followed or trusted: files are opened O_NOFOLLOW|O_NONBLOCK and read only when fstat
 * says they are regular and small; symlinks, FIFOs, sockets, devices and directories are
 * garbage. A directory at a lease name is removed with rmdir() (only ever an empty
 * directory, never a lease), not moved aside. Files are created O_EXCL|O_NOFOLLOW, mode
 * 0644 whatever the umask: every user must be able to read every lease.
 *
 * Sets: the leases of one allocation are written `pending` (naming the allocator and a set
 * token) and are the allocator's, not the owner's, until the whole set is held. Commit
 * makes them the owner's at once: for a set of more than one port, the marker file
 * `.set-<token>` is created first (from then on every pending lease of the set counts as
 * committed), then each lease is rewritten without `pending` (temp file + rename, while
 * the allocator still holds the port, so whatever it replaces cannot be a lease whose
 * holder could bind), then the marker is removed. An allocator killed at any point leaves
 * either a set that is committed as a whole or leases that are stale ('abandoned') the
 * moment it is gone: never a partial set that looks complete.
 *
 * Blocks (a set's runs of contiguous ports, often hundreds) are not rewritten: their leases
 * stay `pending` and the marker stays as long as they do, which commits them as well
 * (leaseState asks the marker also while the allocator lives). That saves a file creation
 * per port. The marker goes when the last block of the set is released, or, left behind by
 * an allocator that is gone, once no pending lease names it (cleanLeftovers).
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

/** Lease files are a few hundred bytes; anything much larger is not a lease (and is not read). */
const MAX_LEASE_BYTES = 64 * 1024;

/** Lease files and set markers: readable by every user of a shared directory. */
const FILE_MODE = 0o644;

/** Marker of a committed set: `.set-<token>`. */
const SET_PREFIX = '.set-';

export function setMarkerPath(dir: string, set: string): string {
  return join(dir, `${SET_PREFIX}${set}`);
}

/*
 * Temp names need to be unique, not unpredictable: they are created with O_EXCL and never
 * followed, so a name planted by someone else only makes a create fail. The pid keeps live processes apart, a counter keeps the calls of one
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
  const shown = shownPath(path);
  return new BerthError(
    EXIT.IOERR,
    `cannot ${what} lease file ${shown}: ${code(e) ?? (e as Error).message}; check the lease directory ${dirname(shown)} (free space, permissions) or set BERTH_LEASE_DIR`,
    { path: shown },
  );
}

/** A rename/unlink refused because the file is another user's (sticky directory) or cannot be moved. */
const isForeignError = (e: unknown): boolean => ['EPERM', 'EACCES', 'EBUSY', 'EROFS'].includes(code(e) ?? '');

export interface LeaseFile {
  /** The path operated on (under /proc/self/fd/… for a shared directory). */
  path: string;
  ino: number;
  text: string;
  /** Owner of the file. */
  uid: number;
  /** undefined: not a valid lease (garbage: reclaimable by its owner or root). */
  record?: LeaseRecord;
  /** Why it is garbage without being read: not a regular file, too large, or unreadable to us. */
  odd?: 'not-a-file' | 'directory' | 'too-large' | 'unreadable';
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

/** What lstat says about a name we could not open: garbage of that owner, or undefined if gone. */
function oddEntry(path: string, odd: NonNullable<LeaseFile['odd']>): LeaseFile | undefined {
  try {
    const st = lstatSync(path);
    return { path, ino: st.ino, text: '', uid: st.uid, odd: st.isDirectory() ? 'directory' : odd };
  } catch (e2) {
    if (code(e2) === 'ENOENT') return undefined;
    throw ioError(path, 'examine', e2);
  }
}

/** Read a lease file and its inode from one open file description; undefined if it does not exist. */
export function readLeaseFile(path: string, port?: number): LeaseFile | undefined {
  let fd: number;
  try {
    // NOFOLLOW: a symlink here is garbage, never a pointer to follow. NONBLOCK: a planted FIFO must not hang us.
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if (code(e) === 'ENOENT') return undefined;
    // Out of descriptors says nothing about the file: judging it garbage would reclaim a live lease.
    if (code(e) === 'EMFILE' || code(e) === 'ENFILE') throw ioError(path, 'open', e);
    // ELOOP: a symlink; ENXIO: a socket; EACCES: another user's file we may not read.
    return oddEntry(path, code(e) === 'EACCES' ? 'unreadable' : 'not-a-file');
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) return { path, ino: st.ino, text: '', uid: st.uid, odd: 'directory' };
    if (!st.isFile()) return { path, ino: st.ino, text: '', uid: st.uid, odd: 'not-a-file' };
    if (st.size > MAX_LEASE_BYTES) return { path, ino: st.ino, text: '', uid: st.uid, odd: 'too-large' };
    const text = readText(fd, st.size);
    const record = parseLeaseRecord(text, port ?? portOfLeaseName(basename(path)));
    return record === undefined ? { path, ino: st.ino, text, uid: st.uid } : { path, ino: st.ino, text, uid: st.uid, record };
  } finally {
    closeSync(fd);
  }
}

/** A set's marker: a regular file owned by the same user as the lease that names it (nobody else can commit a set). */
function setCommitted(dir: string, set: string, uid: number): boolean {
  const st = lstatSync(setMarkerPath(dir, set), { throwIfNoEntry: false });
  return st !== undefined && st.isFile() && st.uid === uid;
}

/**
 * Markers looked up once per set and user for one scan: a block's hundreds of leases name
 * the same one. Safe for a scan's few milliseconds: a marker is created before any lease
 * counts on it and removed only after its leases are gone.
 */
export type MarkerMemo = Map<string, boolean>;

/** The state of a lease file as found in `dir`. */
export function judgeLease(dir: string, f: LeaseFile, now: number, startTimeOf: StartTimeOf, memo?: MarkerMemo): LeaseState {
  return leaseState(f.record, now, startTimeOf, (set) => {
    if (memo === undefined) return setCommitted(dir, set, f.uid);
    const key = `${f.uid}/${set}`;
    let c = memo.get(key);
    if (c === undefined) memo.set(key, (c = setCommitted(dir, set, f.uid)));
    return c;
  });
}

/** A new file for our own writing: O_EXCL|O_NOFOLLOW (a planted name fails, never redirects), mode 0644 whatever the umask. */
function createExclusive(path: string): number {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, FILE_MODE);
  try {
    fchmodSync(fd, FILE_MODE);
  } catch (e) {
    closeSync(fd);
    unlinkQuiet(path);
    throw e;
  }
  return fd;
}

/** A complete temp file with `text`; returns its path and inode. */
function writeTemp(dir: string, text: string): { tmp: string; ino: number } {
  const tmp = uniqueName(dir, 'tmp');
  let fd: number;
  try {
    fd = createExclusive(tmp);
  } catch (e) {
    throw ioError(tmp, 'create', e);
  }
  try {
    // No fsync: leases describe live processes, which a machine crash ends anyway.
    writeSync(fd, text);
    const ino = fstatSync(fd).ino;
    closeSync(fd);
    return { tmp, ino };
  } catch (e) {
    closeSync(fd);
    unlinkQuiet(tmp);
    throw ioError(tmp, 'write', e);
  }
}

/**
 * Create `<port>.lease` holding `record`, atomically and complete. Returns its inode, or
 * undefined when a lease file for the port already exists.
 */
export function createLeaseFile(dir: string, record: LeaseRecord): { path: string; ino: number; text: string } | undefined {
  const path = leasePath(dir, record.port);
  const text = `${JSON.stringify(record)}\n`;
  const { tmp, ino } = writeTemp(dir, text);
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

export type TakeResult = 'removed' | 'gone' | 'kept' | 'displaced' | 'foreign';

/**
 * Remove the lease file at `path` only if it is still inode `ino` and `shouldRemove` holds
 * for the file as found after moving it aside (see the protocol at the top).
 * 'gone': nothing was there; 'kept': another file was there and was put back;
 * 'displaced': it could not be put back (left aside, warned); 'foreign': another user's
 * file (sticky directory) or a non-empty directory, which we may not remove.
 */
export async function takeAway(
  path: string,
  ino: number,
  kind: 'reclaim' | 'release',
  shouldRemove: (moved: LeaseFile) => boolean,
  opts: LeaseStoreOptions = {},
): Promise<TakeResult> {
  const o = resolved(opts);
  let isDir: boolean;
  try {
    const st = lstatSync(path);
    if (st.ino !== ino) return 'kept';
    isDir = st.isDirectory();
  } catch (e) {
    if (code(e) === 'ENOENT') return 'gone';
    throw ioError(path, 'examine', e);
  }
  if (isDir) {
    // Never a lease, so no fresh lease can be lost by removing it by name; moving it aside
    // would only leave a `.reclaim-*` directory behind.
    try {
      rmdirSync(path);
      return 'removed';
    } catch (e) {
      if (code(e) === 'ENOENT') return 'gone';
      if (code(e) === 'ENOTDIR') return 'kept';
      return 'foreign';
    }
  }
  const moved = uniqueName(dirname(path), kind);
  try {
    renameSync(path, moved);
  } catch (e) {
    if (code(e) === 'ENOENT') return 'gone';
    if (isForeignError(e)) return 'foreign';
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
  | { ok: true; lease: Lease; /** the path to operate on (Lease.path is the one users know) */ file: string; id: LeaseIdentity; /** state of the lease we replaced, if any */ reclaimed?: LeaseState }
  | {
      ok: false;
      /** leased: a live or pending lease; foreign: a stale or garbage file of another user, which we may not remove; raced: lost to a concurrent allocator. */
      reason: 'leased' | 'foreign' | 'raced';
      holder?: LeaseRecord;
      state?: LeaseState;
      /** Owner of the lease file in the way. */
      uid?: number;
    };

/**
 * Create the lease for record.port, reclaiming a stale or garbage one in the way.
 * Never removes a live or pending lease. `ok: false, reason: 'leased'` names the holder.
 */
export async function acquireLease(dir: string, record: LeaseRecord, opts: LeaseStoreOptions = {}): Promise<AcquireResult> {
  const o = resolved(opts);
  const path = leasePath(dir, record.port);
  let reclaimed: LeaseState | undefined;
  const refused = (reason: 'leased' | 'foreign', f: LeaseFile, state: LeaseState): AcquireResult => ({
    ok: false,
    reason,
    state,
    uid: f.uid,
    ...(f.record ? { holder: f.record } : {}),
  });
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
      const lease: Lease = { ...record, path: shownPath(path) };
      const id = { ino: made.ino, text: made.text };
      return reclaimed === undefined ? { ok: true, lease, file: path, id } : { ok: true, lease, file: path, id, reclaimed };
    }
    const state = judgeLease(dir, seen, o.now(), o.startTimeOf);
    if (isBlocking(state)) return refused('leased', seen, state);
    const r = await takeAway(path, seen.ino, 'reclaim', (f) => !isBlocking(judgeLease(dir, f, o.now(), o.startTimeOf)), opts);
    if (r === 'foreign') return refused('foreign', seen, state);
    if (r === 'kept' || r === 'displaced') return { ok: false, reason: 'raced' };
    if (r === 'removed') reclaimed = state;
  }
  return { ok: false, reason: 'raced' };
}

/**
 * Make a set of our pending leases the owner's, all at once (see "Sets" at the top).
 * Each item is rewritten from `record` (which has no `pending`) and gets a new identity.
 * The caller must still hold every port. `keepMarker`: the set has blocks, whose leases are
 * not among the items and stay pending: the marker is made whatever the count and kept
 * (removeSetMarker once the last block is released).
 */
export function commitLeases(dir: string, set: string, items: { file: string; id: LeaseIdentity; record: LeaseRecord }[], keepMarker = false): LeaseIdentity[] {
  const marker = setMarkerPath(dir, set);
  if (items.length > 1 || keepMarker) {
    try {
      closeSync(createExclusive(marker));
    } catch (e) {
      throw ioError(marker, 'create', e);
    }
  }
  const ids: LeaseIdentity[] = [];
  for (const it of items) {
    const text = `${JSON.stringify(it.record)}\n`;
    const { tmp, ino } = writeTemp(dir, text);
    try {
      renameSync(tmp, it.file);
    } catch (e) {
      unlinkQuiet(tmp);
      throw ioError(it.file, 'commit', e);
    }
    ids.push({ ino, text });
  }
  if (items.length > 1 && !keepMarker) unlinkQuiet(marker);
  return ids;
}

/** Remove a set's kept marker (its blocks are released): their leases, if any are left, are then stale. */
export function removeSetMarker(dir: string, set: string): void {
  unlinkQuiet(setMarkerPath(dir, set));
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
  /** The path to operate on (Lease.path is the one users know). */
  file: string;
  /** Owner of the lease file (who may remove it, besides root). */
  uid: number;
  state: LeaseState;
  /** The lease blocks its port: live, or pending (its set is still being allocated). */
  live: boolean;
}

export interface GarbageLease {
  /** The path users know. */
  path: string;
  file: string;
  port: number;
  ino: number;
  uid: number;
  /** Why it is not a lease: not valid JSON, or not a small regular file readable to us. */
  why: 'invalid' | NonNullable<LeaseFile['odd']>;
}

export interface LeaseScan {
  leases: ListedLease[];
  /** Lease files that are not valid leases (reclaimable by their owner or root). */
  garbage: GarbageLease[];
  /** Set tokens named by pending leases (their markers are still needed). */
  sets: Set<string>;
}

/** All lease files of a directory with their liveness, ordered by port. */
export function scanLeaseDir(dir: string, opts: LeaseStoreOptions & { portFilter?: (port: number) => boolean } = {}): LeaseScan {
  const o = resolved(opts);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    if (code(e) === 'ENOENT') return { leases: [], garbage: [], sets: new Set() };
    throw new BerthError(EXIT.IOERR, `cannot list lease directory ${shownPath(dir)}: ${code(e) ?? (e as Error).message}`, { path: shownPath(dir) });
  }
  const now = o.now();
  const scan: LeaseScan = { leases: [], garbage: [], sets: new Set() };
  const memo: MarkerMemo = new Map();
  for (const name of names) {
    const port = portOfLeaseName(name);
    if (port === undefined || (opts.portFilter && !opts.portFilter(port))) continue;
    const file = join(dir, name);
    const f = readLeaseFile(file, port);
    if (f === undefined) continue;
    const path = shownPath(file);
    if (f.record === undefined) {
      scan.garbage.push({ path, file, port, ino: f.ino, uid: f.uid, why: f.odd ?? 'invalid' });
      continue;
    }
    if (f.record.pending) scan.sets.add(f.record.pending.set);
    const state = judgeLease(dir, f, now, o.startTimeOf, memo);
    scan.leases.push({ ...f.record, path, file, ino: f.ino, text: f.text, uid: f.uid, state, live: isBlocking(state) });
  }
  scan.leases.sort((a, b) => a.port - b.port);
  scan.garbage.sort((a, b) => a.port - b.port);
  return scan;
}

/**
 * Ports that have a file at their lease name (anything: live, stale, garbage), from the
 * directory listing alone, without opening one. An allocation first plans around all of
 * them (reserve-set.ts): reading and judging every lease file costs far more once blocks
 * put hundreds of leases in a band, and is needed only when the free ports do not suffice.
 */
export function portsWithLeaseFiles(dir: string, portFilter: (port: number) => boolean): Set<number> {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    if (code(e) === 'ENOENT') return new Set();
    throw new BerthError(EXIT.IOERR, `cannot list lease directory ${shownPath(dir)}: ${code(e) ?? (e as Error).message}`, { path: shownPath(dir) });
  }
  const ports = new Set<number>();
  for (const name of names) {
    const port = portOfLeaseName(name);
    if (port !== undefined && portFilter(port)) ports.add(port);
  }
  return ports;
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
  /** Targeted leases, and stale or garbage files, of other users that we may not remove (sticky directory). */
  notOurs: { port: number; uid: number; targeted: boolean; state: LeaseState | 'garbage' }[];
}

function targeted(l: ListedLease, f: ReleaseFilter): boolean {
  // "All" means all of one's own: root cleaning up must not end every user's live leases by accident.
  if (f.all) return l.uid === (process.getuid?.() ?? 0);
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
  const result: ReleaseResult = { released: [], cleaned: 0, notOurs: [] };
  const stale = (f: LeaseFile) => !isBlocking(judgeLease(dir, f, o.now(), o.startTimeOf));
  for (const l of scan.leases) {
    if (targeted(l, filter)) {
      // Only the lease we listed: a replacement created since is not what was targeted.
      const r = await takeAway(l.file, l.ino, 'release', (f) => f.text === l.text, opts);
      if (r === 'removed') result.released.push(l);
      else if (r === 'foreign') result.notOurs.push({ port: l.port, uid: l.uid, targeted: true, state: l.state });
    } else if (!l.live) {
      const r = await takeAway(l.file, l.ino, 'reclaim', stale, opts);
      if (r === 'removed') result.cleaned++;
      else if (r === 'foreign') result.notOurs.push({ port: l.port, uid: l.uid, targeted: false, state: l.state });
    }
  }
  for (const g of scan.garbage) {
    const r = await takeAway(g.file, g.ino, 'reclaim', stale, opts);
    if (r === 'removed') result.cleaned++;
    else if (r === 'foreign') result.notOurs.push({ port: g.port, uid: g.uid, targeted: filter.all === true || (filter.ports?.includes(g.port) ?? false), state: 'garbage' });
  }
  result.cleaned += cleanLeftovers(dir, o.now(), o.startTimeOf, scan.sets);
  return result;
}

/**
 * Temp, reclaim and release files of processes that died mid-operation, and set markers
 * no pending lease names any more (`liveSets`: the tokens a scan found; without it markers
 * are kept), all older than a minute. Directories under such names (left by older
 * versions, which moved planted directories aside) are removed when empty. Other users'
 * leftovers cannot be removed (sticky directory) and are skipped.
 */
export function cleanLeftovers(dir: string, now = Date.now(), startTimeOf: StartTimeOf = defaults.startTimeOf, liveSets?: ReadonlySet<string>): number {
  let n = 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    if (name.charCodeAt(0) !== 46 /* . */) continue;
    if (name.startsWith(SET_PREFIX)) {
      if (liveSets === undefined || liveSets.has(name.slice(SET_PREFIX.length))) continue;
    } else {
      const dash = name.indexOf('-');
      const kind = name.slice(1, dash);
      if (dash < 0 || !(TEMP_KINDS as readonly string[]).includes(kind)) continue;
      const pid = Number(name.slice(dash + 1, name.indexOf('-', dash + 1)));
      if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || startTimeOf(pid) !== undefined) continue;
    }
    const path = join(dir, name);
    try {
      const st = lstatSync(path);
      if (now - st.mtimeMs < 60_000) continue;
      if (st.isDirectory()) rmdirSync(path);
      else unlinkSync(path);
      n++;
    } catch {
      // raced with another cleaner, another user's file, or a directory that is not empty
    }
  }
  return n;
}
