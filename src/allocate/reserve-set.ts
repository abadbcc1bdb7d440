import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type net from 'node:net';
import { BerthError, EXIT } from '../errors.js';
import { inRanges, normalizeRanges } from '../host/intervals.js';
import { findSocketOwners, parseCmdline, socketsHeldBy } from '../host/owners.js';
import { processStartTime } from '../host/proc-stat.js';
import { readHostMap } from '../host/read-host.js';
import type { HostMap, PortRange } from '../host/types.js';
import { userName } from '../util/user-name.js';
import { backoff, transientCompetitor } from './contention.js';
import { explainUnavailable } from './explain.js';
import { giveBack, HeldReservation, SetMarker, type Taken } from './held.js';
import { addressFailure, closeServer, holdPort, type HoldError } from './hold.js';
import { newLeaseRecord } from './lease-record.js';
import { acquireLease, commitLeases, leaseStillOurs, portsWithLeaseFiles, removeOwnLease, scanLeaseDir, type ListedLease } from './lease-store.js';
import { busyPorts, planCandidates, sourceRanges, type Plan } from './plan.js';
import { blockPorts, planBlockStarts, type BlockPlan } from './plan-block.js';
import { openLeaseDir, resolveLeaseLocation, type LeaseDir, type LeaseLocation } from './state-dir.js';
import type { AllocationReport, LeaseRecord, PortSource, Reservation, Strategy } from './types.js';

/*
 * One allocation: several requests (a port source and a count each) leased and held as
 * one set, all or none (design.md §2 Port set). `berth port --count 4` is one request; a
 * stack's replicas are one request each, in one set, so two stacks competing for the same
 * ports never end up each holding half of what they need.
 *
 * An attempt plans each request against the socket table and the lease directory, leases
 * its ports `pending` (lease-store.ts, "Sets") and holds them. When every request has its
 * ports, the set is committed and only then becomes the owner's. When one cannot, everything
 * is given back; if the competitors in the way are transient (contention.ts) the attempt is
 * repeated after a jittered backoff, else the allocation fails with 69 and names them.
 */

/** Lease lifetime when there is no owner pid and no explicit ttl. */
export const DEFAULT_TTL_MS = 10 * 60_000;

/** How long contention is retried by default before giving up with 69. */
export const DEFAULT_CONTENTION_MS = 2500;

/** In-use rows whose owners are looked up for the message (each lookup walks /proc/<pid>/fd). */
const OWNERS_SHOWN = 5;

export interface SetRequest {
  source: PortSource;
  count: number;
  name?: string;
  strategy?: Strategy;
  allowEphemeral?: boolean;
  allowPrivileged?: boolean;
  /** fd handoff: hold on this address with a server's backlog instead of the wildcard (hold.ts). */
  holdAddress?: string;
  /**
   * The `count` ports are one contiguous run p..p+count-1 inside the source (a port set's
   * block): each passes the single-port checks, all are leased in the same set, and they
   * are held only while allocating (to prove each bindable), never once reserveSet returns.
   */
  block?: boolean;
}

export interface SetOptions {
  /** Owner of every lease: it lives while this pid (with this start time) lives. */
  owner?: { pid: number; start: number };
  ttlMs?: number;
  /** Keep the holds open (default true). */
  hold?: boolean;
  procRoot?: string;
  /** Where the leases live (default: resolveLeaseLocation()). */
  location?: LeaseLocation;
  contentionMs?: number;
  signal?: AbortSignal;
}

/** Which request of a set failed, for callers that reserve several at once (berth up). */
export interface SetFailureDetails {
  request: number;
}

let setSeq = 0;

/** A token no other set has: pid, start time, counter and random bits (it names a marker file). */
function setToken(start: number): string {
  const rnd = Math.floor(Math.random() * 0x1000000000000).toString(36);
  return `${process.pid}-${start}-${(setSeq++).toString(36)}-${rnd}`;
}

/**
 * Start times looked up once per pid for one attempt: under contention the same few owners
 * hold most leases. Safe for the attempt's few milliseconds: a pid seen alive that dies
 * meanwhile only makes us skip a port, and a dead pid cannot come back with the same start time.
 */
function memoStartTime(): (pid: number) => number | undefined {
  const seen = new Map<number, number | undefined>();
  return (pid) => {
    if (seen.has(pid)) return seen.get(pid);
    const t = processStartTime(pid);
    seen.set(pid, t);
    return t;
  };
}

function commandOf(procRoot: string, pid: number): string | undefined {
  try {
    const argv = parseCmdline(readFileSync(join(procRoot, String(pid), 'cmdline'), 'utf8'));
    return argv.length > 0 ? argv.join(' ') : undefined;
  } catch {
    return undefined;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * One turn of the event loop. Leasing and binding a port complete without one (the bind is
 * synchronous, 'listening' comes on nextTick), so a signal that arrives meanwhile would
 * only be seen after the whole set is committed; this lets the caller's handler abort first.
 */
function signalsSeen(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function aborted(signal: AbortSignal | undefined): unknown {
  const r: unknown = signal?.reason;
  return r instanceof Error ? r : new BerthError(EXIT.TEMPFAIL, 'allocation interrupted; nothing was leased');
}

/** What an attempt knows of a port's lease: nothing but its file in a quick attempt. */
type KnownLease = Partial<Pick<ListedLease, 'pid' | 'name' | 'uid' | 'pending' | 'createdBy'>>;

interface Attempt {
  host: HostMap;
  /** Blocking leases found at the start, by port (a quick attempt: every lease file, unread). */
  leases: Map<number, KnownLease>;
  /** Planned around every lease file without reading one (see "quick" in reserveSet). */
  quick: boolean;
}

interface Failure {
  request: number;
  plan: Plan;
  got: number;
  attempt: Attempt;
  /** A block request: its run plan (the longest free run goes into the message). */
  block?: BlockPlan;
  /** Usable ports the set's earlier requests took. */
  own?: number[];
}

/**
 * Name the competitors of a failed request: owners of the first in-use rows and of every
 * row on a leased port (a berth hold, or a service that owns its port), sockets closed since
 * the table was read, and the commands of lease holders. Looked up after the attempt, so
 * the few processes that matter are read once; rows whose socket is gone by then are
 * marked closed rather than blamed on an invisible process.
 */
function nameCompetitors(f: Failure, procRoot: string): void {
  const x = f.plan.report.excluded;
  const busy = busyPorts(f.attempt.host.sockets, f.plan.ranges);
  const rows = x.inUse.filter((u, i) => i < OWNERS_SHOWN || f.attempt.leases.has(u.port));
  const inodes = new Set<number>();
  for (const u of rows) {
    const ino = busy.get(u.port)?.inode;
    if (ino !== undefined && ino !== 0) inodes.add(ino);
  }
  const owners = inodes.size > 0 ? findSocketOwners(procRoot, inodes) : new Map();
  const unowned: number[] = [];
  for (const u of rows) {
    const ino = busy.get(u.port)?.inode ?? 0;
    if (ino === 0) continue;
    const lease = f.attempt.leases.get(u.port);
    const list = (owners.get(ino) ?? []) as { pid: number; comm: string; cmdline: string[] }[];
    if (list.length === 0) {
      unowned.push(u.port);
      continue;
    }
    const holders = lease === undefined ? [] : [lease.pending?.pid, lease.createdBy, lease.pid];
    const o = list.find((p) => holders.includes(p.pid)) ?? list[0]!;
    u.pid = o.pid;
    u.command = o.cmdline.length > 0 ? o.cmdline.join(' ') : o.comm;
    // The lease's allocator holding its own port: a hold, given up (or handed to a service) shortly.
    if (lease !== undefined && (o.pid === lease.createdBy || o.pid === lease.pending?.pid) && socketsHeldBy(procRoot, o.pid, new Set([ino])).size > 0) u.heldByBerth = true;
  }
  if (unowned.length > 0) {
    const now = readHostMap({ procRoot, localPorts: unowned.map((p) => ({ lo: p, hi: p })) });
    const still = new Set(now.sockets.map((r) => r.inode));
    for (const u of rows) if (unowned.includes(u.port) && !still.has(busy.get(u.port)?.inode ?? 0)) u.closedSince = true;
  }
  for (const l of x.leased.slice(0, OWNERS_SHOWN)) {
    if (l.pid !== undefined) {
      const c = commandOf(procRoot, l.pid);
      if (c !== undefined) l.command = c;
    }
  }
}

function unavailable(f: Failure, count: number): BerthError {
  const report = f.plan.report;
  const host = f.attempt.host;
  // Whose leases they are matters only when they are another user's.
  for (const l of report.excluded.leased) {
    if (l.uid === undefined) continue;
    if (l.uid === (process.getuid?.() ?? 0)) delete l.uid;
    else {
      const n = userName(l.uid);
      if (n !== undefined) l.user = n;
    }
  }
  const message = explainUnavailable({
    report,
    needed: count,
    usable: f.plan.candidates.length - (f.own?.length ?? 0),
    got: f.got,
    ranges: f.plan.ranges,
    ephemeralInSource: f.plan.ephemeralInSource,
    host,
    isRoot: process.geteuid?.() === 0,
    ...(f.own !== undefined && f.own.length > 0 ? { ownInSet: f.own } : {}),
    ...(f.block ? { block: { runs: f.block.starts.length, ...(f.block.longest ? { longest: f.block.longest } : {}) } } : {}),
  });
  return new BerthError(EXIT.UNAVAILABLE, message, { ...(report as unknown as Record<string, unknown>), request: f.request });
}

/**
 * Lease and hold every request's ports as one set, all or none. Returns one Reservation
 * per request, in order. Throws BerthError 69 explaining the request that could not be
 * met (details.request is its index), 74 when the lease directory is unusable, and the
 * signal's reason when aborted (after giving back what was taken).
 */
export async function reserveSet(requests: readonly SetRequest[], o: SetOptions = {}): Promise<Reservation[]> {
  const procRoot = o.procRoot ?? '/proc';
  const allRanges: PortRange[] = normalizeRanges(requests.flatMap((r) => sourceRanges(r.source)));
  const myStart = processStartTime(process.pid);
  if (myStart === undefined) throw new BerthError(EXIT.SOFTWARE, `cannot read the start time of berth itself (/proc/${process.pid}/stat)`);
  const next = backoff(o.contentionMs ?? DEFAULT_CONTENTION_MS);
  let dir: LeaseDir | undefined;
  // Each round starts quick: planned around every port that has a lease file, read from the
  // directory listing alone. Only when that is not enough (a stale lease may be in the way,
  // or a lease holder must be named) is the round repeated at once reading every lease.
  let quick = true;

  for (;;) {
    if (o.signal?.aborted) throw aborted(o.signal);
    // Only the sources' rows: the planner looks at nothing else, and skipping the rest of a
    // busy node's table early is most of the parse.
    const host = readHostMap({ procRoot, localPorts: allRanges });
    dir ??= openLeaseDir(o.location ?? resolveLeaseLocation(), host.netns);
    const startTimeOf = memoStartTime();
    const inSources = (p: number) => inRanges(p, allRanges);
    const leases = new Map<number, KnownLease>();
    if (quick) for (const p of portsWithLeaseFiles(dir.at, inSources)) leases.set(p, {});
    else {
      for (const l of scanLeaseDir(dir.at, { startTimeOf, portFilter: inSources }).leases) {
        if (!l.live) continue;
        // A block's lease keeps its set token once committed: only the state says it is still being allocated.
        if (l.pending !== undefined && l.state !== 'pending') {
          const { pending: _p, ...committed } = l;
          leases.set(l.port, committed);
        } else leases.set(l.port, l);
      }
    }
    const attempt: Attempt = { host, leases, quick };
    // One clock reading per attempt: every lease of the set says the same creation and expiry.
    const now = Date.now();
    const expiresAt = o.ttlMs !== undefined ? now + o.ttlMs : o.owner === undefined ? now + DEFAULT_TTL_MS : undefined;
    const set = setToken(myStart);
    const pending = { pid: process.pid, pidStart: myStart, set };
    const taken: Taken[][] = [];
    const reports: AllocationReport[] = [];
    const mine = new Set<number>();
    let failure: Failure | undefined;
    // Requests from the same source share one plan and a cursor over its candidates (planning
    // per request made N requests from one range cost N × its size).
    const plans = new Map<string, { plan: ReturnType<typeof planCandidates>; next: number }>();
    const blockPlans = new Map<string, { bp: BlockPlan; next: number }>();
    try {
      for (let i = 0; i < requests.length && failure === undefined; i++) {
        const req = requests[i]!;
        const planKey = JSON.stringify([req.source, req.allowEphemeral === true, req.allowPrivileged === true, req.block === true ? 'lowest' : (req.strategy ?? 'lowest')]);
        let shared = plans.get(planKey);
        if (!shared) plans.set(planKey, (shared = { plan: planCandidates({
          source: req.source,
          host,
          leased: leases,
          allowEphemeral: req.allowEphemeral === true,
          allowPrivileged: req.allowPrivileged === true,
          isRoot: process.geteuid?.() === 0,
          // A block orders its runs itself (plan-block.ts) from the ports in ascending order.
          strategy: req.block === true ? 'lowest' : (req.strategy ?? 'lowest'),
        }), next: 0 }));
        const plan = shared.plan;
        const got: Taken[] = [];
        taken.push(got);
        reports.push(plan.report);
        const take = (port: number, holdAddress: string | undefined) =>
          takePort(dir!, port, plan.report, {
            netns: host.netns,
            ipv6: host.ipv6,
            pending,
            ...(o.owner ? { owner: o.owner } : {}),
            ...(expiresAt !== undefined ? { expiresAt } : {}),
            now,
            ...(req.name !== undefined ? { name: req.name } : {}),
            ...(holdAddress !== undefined ? { holdAddress } : {}),
            startTimeOf,
          });
        if (req.block === true) {
          // One block plan per source and size, with a cursor: the starts before it were tried.
          const bkey = `${planKey}#${req.count}#${req.strategy ?? 'lowest'}`;
          let bs = blockPlans.get(bkey);
          if (!bs) blockPlans.set(bkey, (bs = { bp: planBlockStarts(plan.candidates.filter((p) => !mine.has(p)), req.count, req.strategy ?? 'lowest'), next: 0 }));
          const bp = bs.bp;
          const run = await takeBlock(bp, req.count, take, got, o.signal, mine, bs);
          if (run === undefined) failure = { request: i, plan, got: 0, attempt, block: bp, own: plan.candidates.filter((p) => mine.has(p)) };
          else for (const p of run) mine.add(p);
          continue;
        }
        const all = plan.candidates;
        let left = 0;
        for (let k = shared.next; k < all.length && left < req.count; k++) if (!mine.has(all[k]!)) left++;
        for (; shared.next < all.length; shared.next++) {
          const port = all[shared.next]!;
          if (mine.has(port)) continue;
          // Too few candidates: fail before touching anything.
          if (got.length === req.count || left < req.count) break;
          if (o.signal) await signalsSeen();
          if (o.signal?.aborted) throw aborted(o.signal);
          const t = await take(port, req.holdAddress);
          if (t === undefined) continue;
          got.push(t);
          mine.add(port);
        }
        if (got.length < req.count) failure = { request: i, plan, got: got.length, attempt, own: plan.candidates.filter((p) => mine.has(p) && !got.some((t) => t.lease.port === p)) };
      }
      if (failure === undefined) {
        if (o.signal) await signalsSeen();
        if (o.signal?.aborted) throw aborted(o.signal);
        const marker = commit(dir, set, taken, requests);
        const reservations = taken.map((got, i) => {
          const req = requests[i]!;
          const block = req.block === true;
          return new HeldReservation(got, reports[i]!, { block, ipv6: host.ipv6, procRoot, ...(block && marker ? { marker } : {}), ...(req.holdAddress !== undefined ? { holdAddress: req.holdAddress } : {}) });
        });
        // Held until committed: the allocator never returns a port it could not hold.
        // A block is never held once leased: its program binds inside it itself.
        await Promise.all(reservations.map((r) => (o.hold === false || r.block ? r.unhold() : undefined)));
        return reservations;
      }
    } catch (e) {
      await giveBack(taken.flat());
      throw e;
    }
    await giveBack(taken.flat());
    if (quick && failure.plan.report.excluded.leased.length > 0) {
      // Ports with lease files were in the way: read them (stale ones are reclaimable, live ones are named).
      quick = false;
      continue;
    }
    quick = true;
    nameCompetitors(failure, procRoot);
    const why = transientCompetitor(failure.plan.report);
    const wait = why === undefined || o.signal?.aborted ? undefined : next();
    if (wait === undefined) {
      if (o.signal?.aborted) throw aborted(o.signal);
      throw unavailable(failure, requests[failure.request]!.count);
    }
    await sleep(wait, o.signal);
  }
}

/**
 * Lease and hold one whole run of a block: the first start (in the plan's order) whose
 * every port can be had. A run that loses a port to a race or a stranger is given back at
 * once, and every later start whose run contains a lost port is skipped. The ports of a run
 * are taken together, up to BLOCK_CHUNK at a time (one turn of the event loop for all their
 * binds); a block larger than that lets go of each chunk's holds once they are proved.
 * Returns the run's ports, pushed onto `got`, or undefined when no start worked (the
 * reasons are in the report).
 */
async function takeBlock(
  bp: BlockPlan,
  count: number,
  take: (port: number, holdAddress: string | undefined) => Promise<Taken | undefined>,
  got: Taken[],
  signal: AbortSignal | undefined,
  mine: ReadonlySet<number> = new Set(),
  cursor: { next: number } = { next: 0 },
): Promise<number[] | undefined> {
  const lost: number[] = [];
  for (; cursor.next < bp.starts.length; cursor.next++) {
    const start = bp.starts[cursor.next]!;
    if (lost.some((p) => p >= start && p < start + count)) continue;
    let overlaps = false;
    for (let p = start; p < start + count && !overlaps; p++) overlaps = mine.has(p);
    if (overlaps) continue;
    if (signal) await signalsSeen();
    if (signal?.aborted) throw aborted(signal);
    const ports = blockPorts(start, count);
    const run: Taken[] = [];
    let error: unknown;
    let failed = false;
    for (let k = 0; k < count && !failed; k += BLOCK_CHUNK) {
      const chunk = ports.slice(k, k + BLOCK_CHUNK);
      // Blocks are never handed over as fds: they are proved bindable on the wildcard, the strictest claim.
      const results = await Promise.allSettled(chunk.map((p) => take(p, undefined)));
      results.forEach((r, j) => {
        if (r.status === 'rejected') error ??= r.reason;
        else if (r.value === undefined) lost.push(chunk[j]!);
        else run.push(r.value);
      });
      failed = error !== undefined || run.length < k + chunk.length;
      // Proved: the lease keeps other allocators off, and a block is not held once allocated
      // anyway. Letting go chunk by chunk keeps a 4096-port block within 1024 descriptors.
      if (count > BLOCK_CHUNK) await Promise.all(run.slice(k).map(unholdTaken));
    }
    if (!failed) {
      got.push(...run);
      cursor.next++;
      return ports;
    }
    await giveBack(run);
    if (error !== undefined) throw error;
  }
  return undefined;
}

/** Ports of a block bound at once: bounded so that a large block does not run out of file descriptors. */
const BLOCK_CHUNK = 256;

async function unholdTaken(t: Taken): Promise<void> {
  const s = t.server;
  t.server = undefined;
  if (s) await closeServer(s);
}

interface TakeInput {
  netns: string;
  ipv6: boolean;
  pending: NonNullable<LeaseRecord['pending']>;
  owner?: { pid: number; start: number };
  expiresAt?: number;
  now: number;
  name?: string;
  holdAddress?: string;
  startTimeOf: (pid: number) => number | undefined;
}

/** Lease (pending) and hold one port; undefined, with the reason in `report`, when it cannot be had. */
async function takePort(dir: LeaseDir, port: number, report: AllocationReport, i: TakeInput): Promise<Taken | undefined> {
  const record = newLeaseRecord({
    port,
    netns: i.netns,
    ...(i.owner ? { owner: i.owner } : {}),
    ...(i.expiresAt !== undefined ? { expiresAt: i.expiresAt } : {}),
    ...(i.name !== undefined ? { name: i.name } : {}),
    pending: i.pending,
    now: i.now,
    createdBy: process.pid,
  });
  const got = await acquireLease(dir.at, record, { startTimeOf: i.startTimeOf });
  if (!got.ok) {
    if (got.reason === 'raced') {
      report.excluded.raced.push({ port, reason: 'lease taken concurrently' });
      return undefined;
    }
    const e: AllocationReport['excluded']['leased'][number] = { port };
    const h = got.holder;
    if (got.reason === 'foreign') e.kind = got.state === 'garbage' && h === undefined ? 'unreadable' : 'stale-foreign';
    else if (h?.pending !== undefined && got.state === 'pending') e.kind = 'pending';
    const pid = e.kind === 'pending' ? h?.pending?.pid : h?.pid;
    if (pid !== undefined) e.pid = pid;
    if (h?.name !== undefined) e.name = h.name;
    if (got.uid !== undefined) e.uid = got.uid;
    report.excluded.leased.push(e);
    return undefined;
  }
  let server: net.Server;
  try {
    server = await holdPort(port, i.ipv6, i.holdAddress);
  } catch (e) {
    await removeOwnLease(got.file, got.id);
    const bad = i.holdAddress === undefined ? undefined : addressFailure(e, i.holdAddress);
    if (bad) throw bad;
    report.excluded.bindFailed.push({ port, code: (e as HoldError).code ?? 'UNKNOWN' });
    return undefined;
  }
  // A reclaimer that judged an older file may have moved ours aside; we only keep a
  // port whose lease file is ours once we hold it (see lease-store.ts).
  if (!(await leaseStillOurs(got.file, got.id))) {
    await closeServer(server);
    await removeOwnLease(got.file, got.id); // in case it came back meanwhile
    report.excluded.raced.push({ port, reason: 'lease replaced while binding' });
    return undefined;
  }
  return { lease: got.lease, file: got.file, id: got.id, server };
}

/**
 * Make the whole set the owner's (lease-store.ts, "Sets"): single ports are rewritten and
 * get their new identities; blocks keep their pending files (a file creation per port
 * saved), committed by the marker, which is then kept. Returns the kept marker, if any.
 */
function commit(dir: LeaseDir, set: string, taken: readonly Taken[][], requests: readonly SetRequest[]): SetMarker | undefined {
  const singles = taken.filter((_, i) => requests[i]!.block !== true).flat();
  const blocks = taken.filter((_, i) => requests[i]!.block === true).flat();
  const items = singles.map((t) => {
    const { path: _path, pending: _pending, ...record } = t.lease;
    return { file: t.file, id: t.id, record: record as LeaseRecord };
  });
  const ids = commitLeases(dir.at, set, items, blocks.length > 0);
  singles.forEach((t, k) => (t.id = ids[k]!));
  // The lease as callers see it is the owner's now; a block's file keeps the set's token.
  for (const t of [...singles, ...blocks]) {
    const { pending: _p, ...lease } = t.lease;
    t.lease = lease;
  }
  return blocks.length > 0 ? new SetMarker(dir.at, set, taken.filter((_, i) => requests[i]!.block === true).length) : undefined;
}
