import type net from 'node:net';
import { BerthError, EXIT } from '../errors.js';
import { inRanges, normalizeRanges } from '../host/intervals.js';
import { readHostMap } from '../host/read-host.js';
import type { PortRange } from '../host/types.js';
import { userName } from '../util/user-name.js';
import { hull, knownLeases, nameCompetitors, type Attempt, type Failure } from './competitors.js';
import { backoff, transientCompetitor } from './contention.js';
import { explainUnavailable } from './explain.js';
import { giveBack, unholdTaken, type Taken } from './held.js';
import { addressFailure, closeServer, holdPort, holdUdp, type HoldError } from './hold.js';
import { bindName, closeName, descriptorError, readLeaseTable, rememberFdLimit } from './lease-domain.js';
import type { HolderSpec } from './lease-holder.js';
import { capName, portName, type RecordInfo } from './lease-names.js';
import { planCandidates, sourceRanges, type Plan } from './plan.js';
import { blockPorts, planBlockStarts, type BlockPlan } from './plan-block.js';
import { bindAllocator, commitSet, type CommitRequest } from './reserve-commit.js';
import { readPidns } from '../host/proc-facts.js';
import type { AllocationReport, Lease, PortSource, Reservation, Strategy } from './types.js';

/*
 * One allocation: several requests (a port source and a count each) leased and held as
 * one set, all or none (docs/leases.md). `berth port --count 4` is one request; a
 * stack's replicas are one request each, in one set, so two stacks competing for the same
 * ports never end up each holding half of what they need.
 *
 * An attempt plans each request against the socket table and the lease table (the names
 * of the network namespace's lease domain, lease-domain.ts), binds each port's name (the
 * lease: EADDRINUSE means someone else has it) and holds the port. When every request has
 * its ports, the set is committed (reserve-commit.ts: a record per request, and a holder
 * process when the lease must outlive us). When one cannot, everything is given back; if the competitors in the way are transient (contention.ts) the attempt is
 * repeated after a jittered backoff, else the allocation fails with 69 and names them.
 */

/** `berth port`'s lease lifetime when there is no owner pid and no explicit ttl. */
export const DEFAULT_TTL_MS = 10 * 60_000;

/** How long contention is retried by default before giving up with 69. */
export const DEFAULT_CONTENTION_MS = 2500;

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
  /**
   * The service uses the port's UDP side too (`udp: true`, `--udp`): each port is held on UDP
   * as well, until the handoff, so that both sides are proved free and stay so (hold.ts
   * holdUdp). Not for blocks. Any port with a UDP socket is passed over whatever this says.
   */
  udp?: boolean;
}

export interface SetOptions {
  /** Owner of every lease: it lives while this pid lives (another process than ours: a holder process keeps it). */
  owner?: { pid: number; start?: number };
  /** The lease ends after this long (a holder process keeps it). */
  ttlMs?: number;
  /** Keep the holds open (default true). */
  hold?: boolean;
  procRoot?: string;
  contentionMs?: number;
  signal?: AbortSignal;
}

/** Which request of a set failed, for callers that reserve several at once (berth up). */
export interface SetFailureDetails {
  request: number;
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
 * met (details.request is its index), 74 when out of descriptors, and the signal's reason
 * when aborted (after giving back what was taken).
 */
export async function reserveSet(requests: readonly SetRequest[], o: SetOptions = {}): Promise<Reservation[]> {
  const procRoot = o.procRoot ?? '/proc';
  const allRanges: PortRange[] = normalizeRanges(requests.flatMap((r) => sourceRanges(r.source)));
  const next = backoff(o.contentionMs ?? DEFAULT_CONTENTION_MS);
  const holder = holderOf(o);
  const uid = process.getuid?.() ?? 0;
  const span = hull(allRanges);
  if (o.signal?.aborted) throw aborted(o.signal);
  rememberFdLimit();
  const allocator = await bindAllocator(span.lo, span.hi);
  try {
    for (;;) {
      if (o.signal?.aborted) throw aborted(o.signal);
      // Only the sources' rows: the planner looks at nothing else, and skipping the rest of a
      // busy node's table early is most of the parse.
      const host = readHostMap({ procRoot, localPorts: allRanges });
      // The lease domain is always this process's own network namespace: procRoot fixtures do not move it.
      const leases = knownLeases(readLeaseTable(), (p) => inRanges(p, allRanges), { uid, pid: process.pid });
      const attempt: Attempt = { host, leases };
      // One clock reading per attempt: every lease of the set says the same creation and expiry.
      const now = Date.now();
      const expiresAt = o.ttlMs !== undefined ? now + o.ttlMs : undefined;
      const taken: Taken[][] = [];
      const reports: AllocationReport[] = [];
      const mine = new Set<number>();
      let failure: Failure | undefined;
      // Requests from the same source share one plan and a cursor over its candidates (planning
      // per request made N requests from one range cost N × its size).
      const plans = new Map<string, { plan: Plan; next: number }>();
      const blockPlans = new Map<string, { bp: BlockPlan; next: number }>();
      try {
        for (let i = 0; i < requests.length && failure === undefined; i++) {
          const req = requests[i]!;
          const strategy = req.block === true ? 'lowest' : (req.strategy ?? 'lowest');
          const planKey = JSON.stringify([req.source, req.allowEphemeral === true, req.allowPrivileged === true, strategy]);
          let shared = plans.get(planKey);
          if (!shared) {
            const plan = planCandidates({
              source: req.source,
              host,
              leased: leases,
              allowEphemeral: req.allowEphemeral === true,
              allowPrivileged: req.allowPrivileged === true,
              isRoot: process.geteuid?.() === 0,
              // A block orders its runs itself (plan-block.ts) from the ports in ascending order.
              strategy,
            });
            plans.set(planKey, (shared = { plan, next: 0 }));
          }
          const plan = shared.plan;
          const got: Taken[] = [];
          taken.push(got);
          reports.push(plan.report);
          const lease = (port: number): Lease => ({
            port,
            kind: req.block === true ? 'block' : 'single',
            ...(o.owner ? { pid: o.owner.pid } : {}),
            ...(expiresAt !== undefined ? { expiresAt } : {}),
            ...(req.name !== undefined ? { name: capName(req.name) } : {}),
            createdAt: now,
            createdBy: process.pid,
            netns: host.netns,
            ...(process.env.SLURM_JOB_ID ? { slurmJobId: capName(process.env.SLURM_JOB_ID, 32) } : {}),
            ...(process.env.SLURM_STEP_ID ? { slurmStepId: capName(process.env.SLURM_STEP_ID, 32) } : {}),
          });
          const udp = req.udp === true && req.block !== true;
          const take = (port: number, holdAddress: string | undefined) => takePort(port, plan.report, lease(port), host.ipv6, holdAddress, udp);
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
          const commits: CommitRequest[] = taken.map((got, i) => {
            const req = requests[i]!;
            const block = req.block === true;
            return {
              taken: got,
              report: reports[i]!,
              shape: { block, ipv6: host.ipv6, procRoot, ...(req.holdAddress !== undefined ? { holdAddress: req.holdAddress } : {}), ...(req.udp === true && !block ? { udp: true } : {}) },
              record: recordOf(got, block, uid, o, expiresAt, req.name),
            };
          });
          const reservations = await commitSet(commits, holder);
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
      nameCompetitors(failure, procRoot);
      const why = transientCompetitor(failure.plan.report);
      const wait = why === undefined || o.signal?.aborted ? undefined : next();
      if (wait === undefined) {
        if (o.signal?.aborted) throw aborted(o.signal);
        throw unavailable(failure, requests[failure.request]!.count);
      }
      await sleep(wait, o.signal);
    }
  } finally {
    if (allocator) await closeName(allocator);
  }
}

/** A holder process keeps the lease when it must outlive us: another process's or a ttl's. */
function holderOf(o: SetOptions): HolderSpec | undefined {
  const other = o.owner !== undefined && o.owner.pid !== process.pid;
  if (!other && o.ttlMs === undefined) return undefined;
  return {
    ...(o.owner !== undefined ? { ownerPid: o.owner.pid, ...(o.owner.start ? { ownerStart: o.owner.start } : {}) } : {}),
    ...(o.ttlMs !== undefined ? { ttlMs: o.ttlMs } : {}),
  };
}

function recordOf(got: readonly Taken[], block: boolean, uid: number, o: SetOptions, expiresAt: number | undefined, name: string | undefined): RecordInfo {
  const env = process.env;
  // An owner pid means something only in its PID namespace: the record says which (a label; release reads the holder's own).
  const pidns = o.owner && o.owner.pid !== process.pid ? readPidns('/proc', 'self') : undefined;
  return {
    uid,
    pid: process.pid,
    // run/up own their leases themselves: an owner only when it is another process (fewer bytes: one name per record, mostly).
    ...(o.owner && o.owner.pid !== process.pid ? { owner: o.owner.pid, ...(pidns !== undefined ? { pidns } : {}) } : {}),
    ...(expiresAt !== undefined ? { expiresAt } : {}),
    ...(env.SLURM_JOB_ID ? { job: env.SLURM_JOB_ID } : {}),
    ...(env.SLURM_STEP_ID ? { step: env.SLURM_STEP_ID } : {}),
    kind: block ? 'block' : 'single',
    ports: got.map((t) => t.lease.port),
    ...(name !== undefined ? { name } : {}),
  };
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

/** Lease (its name) and hold one port; undefined, with the reason in `report`, when it cannot be had. */
async function takePort(port: number, report: AllocationReport, lease: Lease, ipv6: boolean, holdAddress: string | undefined, udp = false): Promise<Taken | undefined> {
  const name = await bindName(portName(port));
  if (name === undefined) {
    report.excluded.raced.push({ port, reason: 'leased concurrently' });
    return undefined;
  }
  let server: net.Server;
  try {
    server = await holdPort(port, ipv6, holdAddress);
  } catch (e) {
    await closeName(name);
    const code = (e as HoldError).code ?? 'UNKNOWN';
    if (code === 'EMFILE' || code === 'ENFILE') throw descriptorError(code, `holding port ${port}`);
    const bad = holdAddress === undefined ? undefined : addressFailure(e, holdAddress);
    if (bad) throw bad;
    report.excluded.bindFailed.push({ port, code });
    return undefined;
  }
  if (!udp) return { lease, name, server };
  try {
    return { lease, name, server, udp: await holdUdp(port, ipv6, holdAddress) };
  } catch (e) {
    await closeServer(server);
    await closeName(name);
    const code = (e as HoldError).code ?? 'UNKNOWN';
    if (code === 'EMFILE' || code === 'ENFILE') throw descriptorError(code, `holding the UDP side of port ${port}`);
    const bad = holdAddress === undefined ? undefined : addressFailure(e, holdAddress);
    if (bad) throw bad;
    report.excluded.bindFailed.push({ port, code, protocol: 'udp' });
    return undefined;
  }
}
