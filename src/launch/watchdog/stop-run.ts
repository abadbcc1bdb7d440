import { removeCgroup } from '../../host/cgroup.js';
import { ProcessTree } from '../process-tree.js';
import type { Run } from './state.js';

/*
 * Stopping one run after berth died, as berth would have: its tree (process-tree.ts) looked for again every
 * POLL_MS so late forks are caught, SIGTERM, SIGKILL after the grace, then its cgroup removed. One by one,
 * each start time checked, never by a process group number that may have been reused.
 */

const POLL_MS = 50;
/** Keep looking this long even when nothing is found: berth may have died while a spawn was exec'ing. */
const SETTLE_MS = 250;
/** After SIGKILL, how long to keep trying before giving up on an unkillable process (D state). */
const KILL_PATIENCE_MS = 5_000;

export interface StopReport {
  termed: number;
  killed: number;
  /** Still alive when the watchdog gave up (unkillable). */
  left: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false; // gone meanwhile
  }
}

/** Stops one run's process tree: TERM now, KILL after its grace. */
export async function stopRun(run: Run): Promise<StopReport> {
  const cgroup = run.cgroup !== undefined ? { cgroup: run.cgroup } : {};
  const tree = new ProcessTree('/proc', run.pid ?? -1, run.marker, [], { rootStart: run.start ?? 0, ...cgroup });
  for (const m of run.members) tree.adopt(m.pid, m.start);
  const t0 = performance.now();
  const killAt = t0 + run.graceMs;
  const termed = new Set<number>();
  const killed = new Set<number>();
  for (;;) {
    tree.scan();
    const alive = tree.alive();
    const t = performance.now();
    if (alive.length === 0 && t - t0 >= SETTLE_MS) {
      if (run.cgroup !== undefined) removeCgroup(run.cgroup);
      return { termed: termed.size, killed: killed.size, left: 0 };
    }
    const kill = t >= killAt;
    for (const m of alive) {
      if (kill) {
        if (signal(m.pid, 'SIGKILL')) killed.add(m.pid);
      } else if (!termed.has(m.pid)) {
        if (signal(m.pid, 'SIGTERM')) termed.add(m.pid);
      }
    }
    if (kill && t - killAt > KILL_PATIENCE_MS) return { termed: termed.size, killed: killed.size, left: alive.length };
    await sleep(Math.max(1, Math.min(POLL_MS, kill ? POLL_MS : killAt - t)));
  }
}
