import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cgroupPids } from '../host/cgroup.js';
import { forgetTurn, pidsThisTurn, statThisTurn } from '../host/proc-turn.js';

/*
 * The service is the child and every process descending from it, including daemons that
 * double-forked or called setsid(): re-parented to init, the ppid chain alone loses them, and
 * Node cannot make berth a subreaper. So a process belongs to the tree when any of these holds:
 *   - its parent is a member (checked when first seen, while the chain is still intact),
 *   - it is in the child's process group or session (the child is a session leader),
 *   - its initial environment carries this run's marker (BERTH_RUN_ID=<uuid>), which
 *     survives fork, setsid and exec unless the program scrubs its environment,
 *   - it is in the launch's own cgroup (host/cgroup.ts), where berth could make one: the one
 *     mark nothing can shed (setsid + env -i + double fork before any scan included).
 * Every member ever seen is remembered (pid + start time: a reused pid is not one).
 */

export interface StatIds {
  state: string;
  ppid: number;
  pgrp: number;
  session: number;
  /** Field 22, clock ticks since boot. */
  start: number;
}

/** Fields 3–6 and 22 of /proc/<pid>/stat; comm (field 2) may hold spaces and parentheses. */
export function parseStatIds(stat: string): StatIds | undefined {
  const close = stat.lastIndexOf(')');
  if (close < 0) return undefined;
  const f = stat.slice(close + 2).split(' ');
  const [ppid, pgrp, session, start] = [f[1], f[2], f[3], f[19]].map(Number) as [number, number, number, number];
  if (![ppid, pgrp, session, start].every(Number.isInteger)) return undefined;
  return { state: f[0] ?? '?', ppid, pgrp, session, start };
}

/** How a process was found to belong; 'reported': berth found it and told its watchdog. */
export type JoinedBy = 'root' | 'parent' | 'group' | 'session' | 'marker' | 'cgroup' | 'reported';

export interface TreeMember {
  pid: number;
  start: number;
  ppid: number;
  pgrp: number;
  session: number;
  joinedBy: JoinedBy;
}

export interface TreeOptions {
  /** The root's start time when known (the watchdog learns it from berth): a reused pid is never the root. Default: read now. */
  rootStart?: number;
  /** Called for every member found after the root (berth tells its watchdog about escapees). */
  onJoin?: (m: TreeMember) => void;
  /** The launch's cgroup directory: every process in it (and below it) is a member. */
  cgroup?: string;
}

/**
 * Roots of this process's trees (pid → start time). A process in another tree's group or session
 * is this tree's only if its parent is a member: its environment is not read (at a stack's start
 * every tree read every later sibling's: N²/2 environ reads).
 */
const roots = new Map<number, number>();

export class ProcessTree {
  readonly members = new Map<number, TreeMember>();
  /** pid → start time of processes judged not to belong (judged once: membership starts at fork). */
  private readonly outsiders = new Map<number, number>();
  /** The root's start time (clock ticks since boot); 0 when unknown (no root: the marker alone decides). */
  readonly rootStart: number;
  private readonly marker: Buffer;
  private readonly onJoin: ((m: TreeMember) => void) | undefined;
  readonly cgroup: string | undefined;

  /** `existing`: pids listed just before the spawn: never members, their stat is not read (a busy host's first scan stays cheap). */
  constructor(
    private readonly procRoot: string,
    readonly rootPid: number,
    marker: string,
    existing: Iterable<number> = [],
    opts: TreeOptions = {},
  ) {
    this.marker = Buffer.from(marker);
    this.onJoin = opts.onJoin;
    this.cgroup = opts.cgroup;
    for (const pid of existing) if (pid !== rootPid) this.outsiders.set(pid, -1);
    const ids = rootPid > 0 ? this.readStat(rootPid) : undefined;
    this.rootStart = opts.rootStart ?? ids?.start ?? 0;
    if (ids && ids.start === this.rootStart) {
      this.members.set(rootPid, { pid: rootPid, start: ids.start, ppid: ids.ppid, pgrp: ids.pgrp, session: ids.session, joinedBy: 'root' });
      roots.set(rootPid, ids.start);
    }
  }

  /** A member known from elsewhere (berth's own scans, passed to the watchdog), if that very process still runs. */
  adopt(pid: number, start: number): void {
    const ids = this.readStat(pid);
    if (!ids || ids.start !== start || this.members.has(pid)) return;
    this.outsiders.delete(pid);
    this.members.set(pid, { pid, start, ppid: ids.ppid, pgrp: ids.pgrp, session: ids.session, joinedBy: 'reported' });
  }

  /** This turn's stat (shared with every tree of this process, see host/proc-turn.ts). */
  private turnStat(pid: number): StatIds | undefined {
    const text = statThisTurn(pid, this.procRoot);
    return text === undefined ? undefined : parseStatIds(text);
  }

  /** Another live tree's root (the same process that registered: a reused pid is not). */
  private otherRoot(pid: number): boolean {
    if (pid === this.rootPid) return false;
    const start = roots.get(pid);
    if (start === undefined) return false;
    if (this.turnStat(pid)?.start === start) return true;
    roots.delete(pid);
    return false;
  }

  private readStat(pid: number): StatIds | undefined {
    try {
      return parseStatIds(readFileSync(join(this.procRoot, String(pid), 'stat'), 'latin1'));
    } catch {
      return undefined;
    }
  }

  private hasMarker(pid: number): boolean {
    try {
      return readFileSync(join(this.procRoot, String(pid), 'environ')).indexOf(this.marker) >= 0;
    } catch {
      return false; // gone, or another user's process
    }
  }

  /** Look at processes not seen before; returns the members found by this scan. */
  scan(): TreeMember[] {
    const pids = pidsThisTurn(this.procRoot);
    if (pids.length === 0) return []; // unreadable: /proc always lists this process
    const fresh: { pid: number; ids: StatIds }[] = [];
    const present = new Set(pids);
    for (const pid of pids) {
      if (this.members.has(pid) || this.outsiders.has(pid)) continue;
      const ids = this.turnStat(pid);
      if (!ids) continue;
      if (ids.start < this.rootStart) {
        this.outsiders.set(pid, ids.start); // older than the child: cannot descend from it
        continue;
      }
      fresh.push({ pid, ids });
    }
    // Forget outsiders that are gone so a reused pid is judged afresh.
    for (const pid of this.outsiders.keys()) if (!present.has(pid)) this.outsiders.delete(pid);
    // Parents start before their children: in start order, a parent found in this scan
    // already counts when its child is judged.
    fresh.sort((a, b) => a.ids.start - b.ids.start || a.pid - b.pid);
    const added: TreeMember[] = [];
    const join = (pid: number, ids: StatIds, joinedBy: JoinedBy) => {
      const m: TreeMember = { pid, start: ids.start, ppid: ids.ppid, pgrp: ids.pgrp, session: ids.session, joinedBy };
      this.members.set(pid, m);
      added.push(m);
      this.onJoin?.(m);
    };
    // The launch's cgroup first: whatever is in it belongs, whatever its ancestry, session or environment say.
    for (const pid of this.cgroup === undefined ? [] : cgroupPids(this.cgroup)) {
      // berth itself is in it for the instant of the spawn (or longer, if it could not get out)
      if (pid === process.pid || this.members.has(pid)) continue;
      const ids = this.readStat(pid);
      if (!ids) continue;
      this.outsiders.delete(pid);
      join(pid, ids, 'cgroup');
    }
    for (const { pid, ids } of fresh) {
      if (this.members.has(pid)) continue; // found in the cgroup
      let joinedBy: JoinedBy | undefined;
      if (this.members.has(ids.ppid)) joinedBy = 'parent';
      else if (this.rootPid > 0 && ids.pgrp === this.rootPid) joinedBy = 'group';
      else if (this.rootPid > 0 && ids.session === this.rootPid) joinedBy = 'session';
      else if (this.otherRoot(ids.pgrp) || this.otherRoot(ids.session)) joinedBy = undefined;
      else if (this.hasMarker(pid)) joinedBy = 'marker';
      if (joinedBy === undefined) {
        this.outsiders.set(pid, ids.start);
        continue;
      }
      join(pid, ids, joinedBy);
    }
    return added;
  }

  /** Members still running (same pid and start time, not a zombie). */
  alive(): TreeMember[] {
    const out: TreeMember[] = [];
    for (const m of this.members.values()) {
      const ids = this.readStat(m.pid);
      if (ids && ids.start === m.start && ids.state !== 'Z' && ids.state !== 'X') out.push(m);
    }
    return out;
  }

  has(pid: number): boolean {
    return this.members.has(pid);
  }

  /** Whether `pid` (a listening socket's holder) belongs: a member, or one not scanned yet whose marker or ancestry says so. */
  claims(pid: number): boolean {
    if (this.members.has(pid)) return true;
    this.outsiders.delete(pid);
    forgetTurn(this.procRoot); // a listing made after the holder was seen
    this.scan();
    return this.members.has(pid);
  }
}
