import { BerthError, EXIT } from '../errors.js';
import { inRanges, normalizeRanges } from '../host/intervals.js';
import { readHostMap } from '../host/read-host.js';
import type { PortRange } from '../host/host-map.js';
import { userName } from '../util/user-name.js';
import { hull, knownLeases, nameCompetitors, type Attempt, type Failure } from './competitors.js';
import { backoff, transientCompetitor } from './contention.js';
import { explainUnavailable } from './explain.js';
import { aborted, abortPoint, sleep } from './allocation-abort.js';
import { giveBack, type Taken } from './held-reservation.js';
import { closeName, readLeaseTable, rememberFdLimit } from './lease-domain.js';
import { capName } from './lease-protocol.js';
import { planCandidates, sourceRanges, type Plan } from './plan.js';
import { planBlockStarts, type BlockPlan } from './plan-block.js';
import { bindAllocator, commitSet, type CommitRequest } from './reserve-commit.js';
import { holderOf, recordOf, type LeaseLife } from './set-record.js';
import { takeBlock } from './take-block.js';
import { takePort } from './take-port.js';
import type { AllocationReport, Lease, PortSource, Reservation, Strategy } from './allocation-types.js';

/*
 * Several requests leased and held as one set, all or none (docs/leases.md): two stacks competing
 * for the same ports never each hold half. A failed attempt gives everything back and retries
 * after a jittered backoff while the competitors are transient, else fails with 69.
 */

/** `berth port`'s lease lifetime when there is no owner pid and no explicit ttl. */
export const DEFAULT_TTL_MS = 10 * 60_000;

export const DEFAULT_CONTENTION_MS = 2500;

export interface SetRequest {
  source: PortSource;
  count: number;
  name?: string;
  strategy?: Strategy;
  allowEphemeral?: boolean;
  allowPrivileged?: boolean;
  /** fd handoff: hold on this address with a server's backlog instead of the wildcard. */
  holdAddress?: string;
  /** The `count` ports are one contiguous run inside the source, held only while allocating (to prove each bindable). */
  block?: boolean;
  /** Hold each port's UDP side too until the handoff (`--udp`); not for blocks. */
  udp?: boolean;
}

export interface SetOptions extends LeaseLife {
  hold?: boolean;
  procRoot?: string;
  contentionMs?: number;
  signal?: AbortSignal;
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

/** A Reservation per request, all or none. Throws BerthError 69 (details.request: the one not met), 74, or the signal's reason. */
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
      // Only the sources' rows: skipping the rest of a busy node's table early is most of the parse.
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
      // Requests from the same source share one plan and a cursor over its candidates (not N × its size).
      const plans = new Map<string, { plan: Plan; next: number }>();
      const blockPlans = new Map<string, { plan: BlockPlan; next: number }>();
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
            const blockKey = `${planKey}#${req.count}#${req.strategy ?? 'lowest'}`;
            let blockCursor = blockPlans.get(blockKey);
            if (!blockCursor) {
              const starts = planBlockStarts(plan.candidates.filter((p) => !mine.has(p)), req.count, req.strategy ?? 'lowest');
              blockPlans.set(blockKey, (blockCursor = { plan: starts, next: 0 }));
            }
            const run = await takeBlock(blockCursor.plan, req.count, take, got, o.signal, mine, blockCursor);
            if (run === undefined) failure = { request: i, plan, got: 0, attempt, block: blockCursor.plan, own: plan.candidates.filter((p) => mine.has(p)) };
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
            await abortPoint(o.signal);
            const t = await take(port, req.holdAddress);
            if (t === undefined) continue;
            got.push(t);
            mine.add(port);
          }
          if (got.length < req.count) {
            failure = { request: i, plan, got: got.length, attempt, own: plan.candidates.filter((p) => mine.has(p) && !got.some((t) => t.lease.port === p)) };
          }
        }
        if (failure === undefined) {
          await abortPoint(o.signal);
          const commits: CommitRequest[] = taken.map((got, i) => {
            const req = requests[i]!;
            const block = req.block === true;
            return {
              taken: got,
              report: reports[i]!,
              shape: {
                block,
                ipv6: host.ipv6,
                procRoot,
                ...(req.holdAddress !== undefined ? { holdAddress: req.holdAddress } : {}),
                ...(req.udp === true && !block ? { udp: true } : {}),
              },
              record: recordOf(got.map((t) => t.lease.port), block, uid, o, expiresAt, req.name),
            };
          });
          const reservations = await commitSet(commits, holder);
          // Held until committed; a block is never held once leased (its program binds inside it).
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
