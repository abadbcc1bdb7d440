import type { ProcFacts } from '../host/proc-facts.js';
import { HOLDER_ARGV0 } from './lease-holder.js';

/*
 * What `berth release` may end, decided from what the kernel proves (the port name's inode, the
 * processes holding it, their uid, argv, parent and starting environment), never from what a name
 * says: anyone can bind any name (docs/leases.md). A record's fields only word messages. Pure.
 */

/** A process holding a lease's socket, with what the kernel shows of it. */
export interface HoldingProc extends ProcFacts {
  /** SLURM_JOB_ID of its environment as it started (readable for one's own processes; root: all). */
  job?: string;
}

export interface ReleaseCandidate {
  port: number;
  state: 'live' | 'pending';
  /** The uid the record claims (a label, for messages only). */
  claimedUid?: number;
  /** The port name's inode, when the kernel's listing proves it (padded, listed once). */
  inode?: number;
  /** Processes holding that inode, where visible. */
  procs: HoldingProc[];
}

/** Which leases `berth release` targets. */
export interface ReleaseFilter {
  ports?: readonly number[];
  ownerPid?: number;
  jobId?: string;
  all?: boolean;
}

export interface Caller {
  uid: number;
  root: boolean;
  pidns?: number;
}

export type Verdict =
  | { port: number; act: 'signal'; pids: number[] }
  | { port: number; act: 'refuse'; why: 'other-user' | 'not-visible' | 'not-proven'; uid?: number }
  | { port: number; act: 'held-by'; pid: number; command: string };

const PID_ARG = /^--pid=([1-9]\d{0,9})$/;

/** `tail`, by name or by the system path the holder runs it from (lease-holder.ts). */
const isTail = (arg: string | undefined): boolean =>
  arg === 'tail' || (arg !== undefined && /^\/(?:usr\/)?bin\/tail$|^\/run\/current-system\/sw\/bin\/tail$/.test(arg));

/** The owner a holder's argv (as the kernel shows it) watches: `tail --pid=N …` or `timeout D tail --pid=N …`. */
export function watchedPid(argv: readonly string[]): number | undefined {
  const at = argv[0] === HOLDER_ARGV0 ? (argv[1]?.startsWith('--pid=') ? 1 : isTail(argv[2]) ? 3 : -1) : isTail(argv[0]) ? 1 : -1;
  const m = at < 0 ? null : PID_ARG.exec(argv[at] ?? '');
  return m ? Number(m[1]) : undefined;
}

/** The holders among `procs`, and the rest. The `tail` a `timeout` holder runs (its child, same uid and owner) is part of it. */
export function splitHolders(procs: readonly HoldingProc[]): { holders: HoldingProc[]; others: HoldingProc[] } {
  const holders = procs.filter((p) => p.argv[0] === HOLDER_ARGV0);
  const others = procs.filter((p) => {
    if (p.argv[0] === HOLDER_ARGV0) return false;
    const parent = holders.find((h) => h.pid === p.ppid);
    const part = parent !== undefined && isTail(parent.argv[2]) && p.uid === parent.uid && isTail(p.argv[0]) && watchedPid(p.argv) === watchedPid(parent.argv);
    return !part;
  });
  return { holders, others };
}

/** Whether the caller asked for this lease, by what the kernel shows of its holding processes. */
export function isTargeted(c: ReleaseCandidate, ask: ReleaseFilter, me: Caller): boolean {
  if (ask.ports?.includes(c.port)) return true;
  if (c.inode === undefined) return false;
  // "All" is all of one's own (root too: only root's): by the holders' real uid.
  if (ask.all && c.procs.some((p) => p.uid === me.uid)) return true;
  // A pid means something only in its PID namespace: a holder's `--pid=N` is N of the holder's
  // namespace, so it answers --owner N only when the caller is in that same namespace (a
  // container's inner owner 5 is not the host's pid 5). The process holding the socket
  // itself is named by its pid in the caller's /proc.
  if (
    ask.ownerPid !== undefined &&
    c.procs.some((p) => p.pid === ask.ownerPid || (watchedPid(p.argv) === ask.ownerPid && p.pidns !== undefined && p.pidns === me.pidns))
  )
    return true;
  if (ask.jobId !== undefined && c.procs.some((p) => p.job === ask.jobId)) return true;
  return false;
}

/** What to do with a targeted lease. */
export function verdict(c: ReleaseCandidate, me: Caller): Verdict {
  const port = c.port;
  if (c.inode === undefined) return { port, act: 'refuse', why: 'not-proven' };
  if (c.procs.length === 0) {
    // Nothing proves whose it is; the record's uid only words the message.
    return c.claimedUid !== undefined && c.claimedUid !== me.uid
      ? { port, act: 'refuse', why: 'other-user', uid: c.claimedUid }
      : { port, act: 'refuse', why: 'not-visible' };
  }
  const stranger = c.procs.find((p) => p.uid !== me.uid);
  if (!me.root && stranger !== undefined) return { port, act: 'refuse', why: 'other-user', ...(stranger.uid !== undefined ? { uid: stranger.uid } : {}) };
  const { holders, others } = splitHolders(c.procs);
  if (others.length > 0) return { port, act: 'held-by', pid: others[0]!.pid, command: others[0]!.argv.join(' ') };
  return { port, act: 'signal', pids: holders.map((h) => h.pid) };
}
