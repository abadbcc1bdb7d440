/*
 * How berth and its watchdog talk. Node cannot have the kernel signal berth's children when berth dies
 * (PR_SET_PDEATHSIG), so one small process per berth process, started with the first launch in a session of
 * its own (out of reach of a Ctrl-C or a signal to berth's process group), reads a pipe whose only writer is
 * berth: its end of file is berth's death, however it died (SIGKILL, OOM). On it, one WatchMessage a line, each
 * said before it matters: a run's marker before its spawn (a berth killed in between leaves the service
 * findable by it), its pid right after, its end once berth cleaned up itself. At end of file the watchdog stops
 * what is still registered (stop-run.ts); one that died while berth lives is started again and told it all.
 *
 * The IPC channel beside it carries the launches' lease sockets (SCM_RIGHTS), which must outlive berth until
 * their service is stopped. Sent, not inherited as by a lease holder (allocate/lease-holder.ts, a coreutils
 * program started for leases that exist before it): later launches' leases come after the watchdog runs, and a
 * watchdog per launch would cost about 40 ms of CPU each (docs/run.md). A launch's end sends 'release' with how
 * many sockets were sent; the watchdog answers 'released' once it has them all and closed them, so none in
 * flight outlives the answer, and when berth exits every lease name it held is gone (docs/leases.md).
 */

export type WatchMessage =
  /** A launch is about to spawn: its process tree carries `marker` (BERTH_RUN_ID=…) in its environment, and is born in `cgroup` when berth made one. */
  | { op: 'run'; id: string; marker: string; graceMs: number; cgroup?: string }
  /** The launch's child (also its process group and session id) and its start time. */
  | { op: 'pid'; id: string; pid: number; start: number }
  /** A tree member outside the child's process group (a setsid daemon), in case it scrubbed its environment. */
  | { op: 'member'; id: string; pid: number; start: number }
  /** The launch has ended and cleaned up: nothing left to stop. */
  | { op: 'end'; id: string }
  /** A stack's run directory: after berth's death its endpoints.json must stop claiming live services. */
  | { op: 'runDir'; path: string }
  /** The stack has written its final endpoints.json itself. */
  | { op: 'runDirEnd'; path: string };

export type IpcMessage =
  /** Comes with one lease socket of launch `id`. */
  | { op: 'lease'; id: string }
  /** berth → watchdog: launch `id` ended; close its lease sockets (`leases` were sent). */
  | { op: 'release'; id: string; leases: number }
  /** watchdog → berth: closed all of them. */
  | { op: 'released'; id: string };

/** An IPC message, or undefined for anything else. */
export function parseIpc(m: unknown): IpcMessage | undefined {
  const o = m as { op?: unknown; id?: unknown; leases?: unknown } | null;
  if (o === null || typeof o !== 'object' || !isId(o.id)) return undefined;
  if (o.op === 'lease' || o.op === 'released') return { op: o.op, id: o.id };
  if (o.op === 'release' && isTicks(o.leases)) return { op: 'release', id: o.id, leases: o.leases };
  return undefined;
}

export function formatMessage(m: WatchMessage): string {
  return JSON.stringify(m) + '\n';
}

const isId = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 200;
const isPid = (v: unknown): v is number => Number.isInteger(v) && (v as number) > 0;
const isTicks = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0;

/** One line from berth; undefined for anything malformed (ignored: the watchdog must not die of it). */
export function parseMessage(line: string): WatchMessage | undefined {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (o === null || typeof o !== 'object') return undefined;
  switch (o.op) {
    case 'run': {
      if (!isId(o.id) || typeof o.marker !== 'string' || o.marker.length === 0 || !isTicks(o.graceMs)) return undefined;
      const cgroup = typeof o.cgroup === 'string' && o.cgroup.startsWith('/') ? { cgroup: o.cgroup } : {};
      return { op: 'run', id: o.id, marker: o.marker, graceMs: o.graceMs, ...cgroup };
    }
    case 'pid':
    case 'member':
      return isId(o.id) && isPid(o.pid) && isTicks(o.start) ? { op: o.op, id: o.id, pid: o.pid, start: o.start } : undefined;
    case 'end':
      return isId(o.id) ? { op: 'end', id: o.id } : undefined;
    case 'runDir':
    case 'runDirEnd':
      return typeof o.path === 'string' && o.path.startsWith('/') ? { op: o.op, path: o.path } : undefined;
    default:
      return undefined;
  }
}
