import { socketsHeldBy, findSocketOwners } from '../host/owners.js';
import { readEnvValue, readPidns, readProcFacts } from '../host/proc-facts.js';
import { readNetns } from '../host/read-host.js';
import { sleep } from './allocation-abort.js';
import { readUnixTable } from './lease-domain.js';
import { HOLDER_ARGV0 } from './lease-holder.js';
import { leaseTable, listNames, provenPortInodes } from './lease-table.js';
import { leasesOf, type LeaseListOptions, type LeaseState, type ListedLease } from './lease-list.js';
import { isTargeted, verdict, type Caller, type HoldingProc, type ReleaseCandidate, type ReleaseFilter } from './release-plan.js';

/*
 * `berth release`: end leases by ending their holder processes. What to end is decided
 * from kernel facts only (release-plan.ts): a forged record (uid=0, job=J, owner=X), a
 * forged line of /proc/net/unix or a duplicated record part can change what berth leases
 * shows, never whom release signals.
 */

export interface ReleaseResult {
  /** Targeted leases ended (their holder is gone). */
  released: ListedLease[];
  /** Nothing to clean any more: always 0 (kept for callers). */
  cleaned: number;
  /**
   * Targeted leases we may not end: another user's (by the uid of the process holding it; a
   * record's claim only when nothing is visible), held where we cannot see, or a name the
   * kernel's listing does not prove (not padded as berth binds it: a forged line, or a foreign implementation's).
   */
  notOurs: { port: number; uid?: number; targeted: boolean; state: LeaseState | 'garbage'; why: 'other-user' | 'not-visible' | 'not-proven' }[];
  /** Targeted leases held by a process that is not a lease holder (berth run/up, a library caller): stop it to end them. */
  heldBy: { port: number; pid: number; command: string }[];
}

/** The processes holding each proven inode, with their kernel facts. */
function holdingProcs(procRoot: string, inodes: Set<number>, withJob: boolean): Map<number, HoldingProc[]> {
  const out = new Map<number, HoldingProc[]>();
  const facts = new Map<number, HoldingProc | undefined>();
  for (const [inode, owners] of findSocketOwners(procRoot, inodes)) {
    const list: HoldingProc[] = [];
    for (const o of owners) {
      if (!facts.has(o.pid)) {
        const f: HoldingProc | undefined = readProcFacts(procRoot, o.pid);
        if (f && withJob) {
          const job = readEnvValue(procRoot, o.pid, 'SLURM_JOB_ID');
          if (job !== undefined) f.job = job;
        }
        facts.set(o.pid, f);
      }
      const f = facts.get(o.pid);
      if (f) list.push(f);
    }
    out.set(inode, list);
  }
  return out;
}

/** Still the holder we decided on: same process (start time), same uid, still a holder of this socket. */
function stillHolder(procRoot: string, was: HoldingProc, inode: number): boolean {
  const now = readProcFacts(procRoot, was.pid);
  return (
    now !== undefined &&
    now.argv[0] === HOLDER_ARGV0 &&
    now.uid === was.uid &&
    now.startTime === was.startTime &&
    socketsHeldBy(procRoot, was.pid, new Set([inode])).size > 0
  );
}

/**
 * End the targeted leases by ending their holder processes (the set's other ports end too, listed
 * in `released`): only a holder still holding the socket, one's own (root: anyone's). Waits up to
 * a second for the names to go.
 */
export async function releaseLeases(opts: ReleaseFilter & LeaseListOptions = {}): Promise<ReleaseResult> {
  const procRoot = opts.procRoot ?? '/proc';
  const pidns = readPidns(procRoot, 'self');
  const me: Caller = { uid: process.getuid?.() ?? 0, root: process.geteuid?.() === 0, ...(pidns !== undefined ? { pidns } : {}) };
  const result: ReleaseResult = { released: [], cleaned: 0, notOurs: [], heldBy: [] };
  const names = listNames(readUnixTable(procRoot));
  const proven = provenPortInodes(names);
  const all = leasesOf(leaseTable(names), readNetns(procRoot));
  const procs = holdingProcs(procRoot, new Set(proven.values()), opts.jobId !== undefined);
  const candidate = (l: ListedLease): ReleaseCandidate => {
    const inode = proven.get(l.port);
    return {
      port: l.port,
      state: l.state,
      ...(l.uid !== undefined ? { claimedUid: l.uid } : {}),
      ...(inode !== undefined ? { inode } : {}),
      procs: inode === undefined ? [] : (procs.get(inode) ?? []),
    };
  };
  const ending: { lease: ListedLease; inode: number }[] = [];
  const signalled = new Set<number>();
  for (const l of all) {
    const c = candidate(l);
    if (!isTargeted(c, opts, me)) continue;
    const v = verdict(c, me);
    if (v.act === 'refuse') {
      result.notOurs.push({ port: l.port, ...(v.uid !== undefined ? { uid: v.uid } : {}), targeted: true, state: l.state, why: v.why });
      continue;
    }
    if (v.act === 'held-by') {
      result.heldBy.push({ port: l.port, pid: v.pid, command: v.command });
      continue;
    }
    for (const pid of v.pids) {
      if (signalled.has(pid)) continue;
      const was = c.procs.find((p) => p.pid === pid)!;
      if (!stillHolder(procRoot, was, c.inode!)) continue;
      try {
        process.kill(pid, 'SIGTERM');
        signalled.add(pid);
      } catch {
        // gone meanwhile, or not ours to signal
      }
    }
    ending.push({ lease: l, inode: c.inode! });
  }
  // A holder holds its whole set (one berth port call): every lease it held ends with it.
  for (const l of all) {
    const c = candidate(l);
    if (c.inode !== undefined && !ending.some((e) => e.lease === l) && c.procs.some((p) => signalled.has(p.pid))) ending.push({ lease: l, inode: c.inode });
  }
  const deadline = Date.now() + 1000;
  let left = ending;
  while (left.length > 0) {
    const bound = provenPortInodes(listNames(readUnixTable(procRoot)));
    const still = left.filter((e) => bound.get(e.lease.port) === e.inode);
    for (const e of left) if (!still.includes(e)) result.released.push(e.lease);
    left = still;
    if (left.length === 0 || Date.now() >= deadline) break;
    await sleep(20);
  }
  for (const e of left) result.notOurs.push({ port: e.lease.port, targeted: true, state: e.lease.state, why: 'not-visible' });
  result.released.sort((a, b) => a.port - b.port);
  return result;
}

/** End every lease of a Slurm job (e.g. from an epilog): those whose holders started with its SLURM_JOB_ID. */
export function releaseJob(jobId: string, opts: LeaseListOptions = {}): Promise<ReleaseResult> {
  return releaseLeases({ ...opts, jobId });
}
