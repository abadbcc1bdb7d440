import { readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { parseCmdline, parseStatusUid } from './owners.js';
import { tryRead } from './proc-read.js';
import { parseStatPpid, parseStatStartTime, statDead } from './proc-stat.js';

/*
 * What the kernel shows of a process, for decisions that must not rest on claims (berth release).
 * status's uid is translated for the opener (host root sees a rootless container's "root" as the
 * user it is). A fact that cannot be read (the process ended, or is another user's) is undefined.
 */

export interface ProcFacts {
  pid: number;
  uid?: number;
  ppid?: number;
  /** Inode of its pid namespace (/proc/PID/ns/pid -> "pid:[INODE]"). */
  pidns?: number;
  argv: string[];
  /** Clock ticks since boot (field 22 of stat). */
  startTime?: number;
  /** Thread-group id: equal to pid only for a process, not for one of its threads. */
  tgid?: number;
  /** A zombie or dead process (state Z or X). */
  dead?: boolean;
}

/** Inode of a namespace link target such as "pid:[4026531836]". */
export function nsInode(target: string): number | undefined {
  const m = /^[a-z_]+:\[(\d{1,15})\]$/.exec(target);
  return m ? Number(m[1]) : undefined;
}

/** The pid namespace of `pid` ('self' for the caller), undefined when it cannot be read. */
export function readPidns(procRoot: string, pid: number | 'self'): number | undefined {
  try {
    return nsInode(readlinkSync(join(procRoot, String(pid), 'ns', 'pid')));
  } catch {
    return undefined;
  }
}

function statusField(status: string, key: string): number | undefined {
  const m = new RegExp(`(?:^|\\n)${key}:\\s+(\\d+)`).exec(status);
  return m ? Number(m[1]) : undefined;
}

/** The facts of `pid` under procRoot; undefined when it does not exist (or cannot be read at all). */
export function readProcFacts(procRoot: string, pid: number): ProcFacts | undefined {
  const dir = join(procRoot, String(pid));
  const status = tryRead(join(dir, 'status'), 'latin1');
  if (status === undefined) return undefined;
  const f: ProcFacts = { pid, argv: parseCmdline(tryRead(join(dir, 'cmdline'), 'latin1') ?? '') };
  const uid = parseStatusUid(status);
  if (uid !== undefined) f.uid = uid;
  const tgid = statusField(status, 'Tgid');
  if (tgid !== undefined) f.tgid = tgid;
  const stat = tryRead(join(dir, 'stat'), 'latin1');
  if (stat !== undefined) {
    const ppid = parseStatPpid(stat);
    if (ppid !== undefined) f.ppid = ppid;
    const start = parseStatStartTime(stat);
    if (start !== undefined) f.startTime = start;
    if (statDead(stat)) f.dead = true;
  }
  const ns = readPidns(procRoot, pid);
  if (ns !== undefined) f.pidns = ns;
  return f;
}

/** The value of `key` in the process's environment as it started (root, or one's own), undefined otherwise. */
export function readEnvValue(procRoot: string, pid: number, key: string): string | undefined {
  const raw = tryRead(join(procRoot, String(pid), 'environ'), 'latin1');
  if (raw === undefined) return undefined;
  const want = `${key}=`;
  for (const entry of raw.split('\0')) if (entry.startsWith(want)) return entry.slice(want.length);
  return undefined;
}

/**
 * `pid`'s start time when it can own a lease (a live thread-group leader: /proc/TID of a thread
 * exists too), and /proc is the caller's own (after `unshare --pid --fork` without --mount-proc it
 * is the parent namespace's, where the same number is another process); otherwise why not.
 */
export function ownerCheck(procRoot: string, pid: number, self = process.pid): { start: number } | { why: string } {
  let me: string | undefined;
  try {
    me = readlinkSync(join(procRoot, 'self'));
  } catch {
    me = undefined;
  }
  if (me !== String(self))
    return {
      why: `${procRoot} does not show this process's PID namespace (/proc/self is ${me ?? 'unreadable'}, this process is ${self}): mount a /proc of this ` +
        `namespace (unshare --pid --fork --mount-proc), or give no --owner`,
    };
  const f = readProcFacts(procRoot, pid);
  if (f === undefined || f.dead || f.startTime === undefined)
    return { why: `owner pid ${pid} is not a running process of this PID namespace; the lease would end at once` };
  if (f.tgid !== pid) return { why: `owner pid ${pid} is a thread of process ${f.tgid ?? '?'}, not a process: give the process's pid (e.g. $$ of a shell)` };
  if (pid === self)
    return { why: `owner pid ${pid} is this berth process itself, which exits at once: give the pid of the process the lease is for (e.g. $$)` };
  return { start: f.startTime };
}
