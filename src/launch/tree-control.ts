import { forgetTurn } from '../host/proc-turn.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseCmdline } from '../host/owners.js';
import { parseStatIds } from './process-tree.js';
import type { LaunchState } from './state.js';
import type { TreeSurvivor } from './launch-api.js';

/** Whether any process of the tree other than the child itself is alive (a daemon it left). */
export function descendantsAlive(s: LaunchState): boolean {
  if (!s.tree) return false;
  const others = () => s.tree!.alive().some((m) => m.pid !== s.tree!.rootPid);
  s.tree.scan();
  if (others()) return true;
  // "None left" ends or fails the launch, so it is said only from a listing of /proc made now:
  // this turn's listing may predate a fork whose parent has died since (a daemon's middle
  // process exits right after forking the daemon; seen in the fault-injection campaign).
  forgetTurn(s.procRoot);
  s.tree.scan();
  return others();
}

function kill(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone meanwhile
  }
}

/** Signal the child's process group and tree members that left it (setsid daemons). */
export function signalTree(s: LaunchState, sig: NodeJS.Signals): void {
  const pgid = s.child?.pid;
  if (pgid === undefined) return;
  kill(-pgid, sig);
  if (!s.tree) return;
  s.tree.scan();
  for (const m of s.tree.alive()) {
    if (sig === 'SIGTERM') s.termed.add(m.pid);
    if (m.pgrp !== pgid) kill(m.pid, sig);
  }
}

/** SIGTERM to members found since the tree was last sent one (forked meanwhile, or found late). */
export function termNewcomers(s: LaunchState): void {
  if (!s.tree) return;
  s.tree.scan();
  for (const m of s.tree.alive()) {
    if (s.termed.has(m.pid)) continue;
    s.termed.add(m.pid);
    kill(m.pid, 'SIGTERM');
  }
}

/**
 * Processes of the tree still running (the child included), from a listing of /proc made
 * now: after the launch has exited, whatever outlived its TERM and KILL (a process in
 * uninterruptible sleep, state D, ignores SIGKILL until its I/O returns).
 */
export function treeSurvivors(s: LaunchState): TreeSurvivor[] {
  if (!s.tree) return [];
  forgetTurn(s.procRoot);
  s.tree.scan();
  const out: TreeSurvivor[] = [];
  for (const m of s.tree.alive()) {
    const dir = join(s.procRoot, String(m.pid));
    try {
      const state = parseStatIds(readFileSync(join(dir, 'stat'), 'latin1'))?.state ?? '?';
      out.push({ pid: m.pid, state, command: parseCmdline(readFileSync(join(dir, 'cmdline'), 'latin1')).join(' ') });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
