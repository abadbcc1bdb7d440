import { findSocketOwners, socketsHeldBy } from '../../host/owners.js';
import { readProcTables } from '../../host/read-tables.js';
import type { SocketRow } from '../../host/host-map.js';
import type { TreeSurvivor } from '../../launch/launch-api.js';
import type { Replica } from './replica.js';

/*
 * Proof that a job's old generation is gone before the next one starts: no process of any
 * rank's tree left, no socket on its ports held by any process but berth. A socket no file
 * refers to (TIME_WAIT, an orphaned FIN_WAIT) holds nothing: the next generation's ports are fresh.
 */

/** After the KILL: what is still there gets this long (and KILL again) before it counts. */
const SURVIVOR_WAIT_MS = 1_000;
/** A socket of the old generation whose holder has not let go yet (a process outside the trees that got its fd). */
const PORT_WAIT_MS = 2_000;
const POLL_MS = 25;

export interface Survivor extends TreeSurvivor {
  rep: Replica;
}

/** Processes of the ranks' trees that outlive SIGKILL (state D: stuck in the kernel), after a last wait. */
export async function survivorsOf(reps: readonly Replica[]): Promise<Survivor[]> {
  const until = performance.now() + SURVIVOR_WAIT_MS;
  for (;;) {
    const left = reps.flatMap((rep) => (rep.runner?.survivors() ?? []).map((s) => ({ ...s, rep })));
    if (left.length === 0 || performance.now() >= until) return left;
    for (const s of left) {
      try {
        process.kill(s.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** "process 123 (python3 train.py) of trainer/1 survived SIGKILL (state D: …)" */
export function survivorText(s: Survivor): string {
  const why =
    s.state === 'D'
      ? 'state D: in uninterruptible sleep, stuck in the kernel (a hung disk or network filesystem); only its I/O returning, or a reboot, ends it'
      : `state ${s.state}`;
  return `process ${s.pid} (${s.command || '?'}) of ${s.rep.label} survived SIGKILL (${why})`;
}

export interface HeldPort {
  row: SocketRow;
  /** "pid 123 (python3)", or the uid when the holder cannot be seen. */
  holder: string;
}

/** Sockets on `ports` held by a process other than berth (`self`), after waiting a little for them to go. */
export async function portsStillHeld(procRoot: string, ports: readonly number[], self = process.pid): Promise<HeldPort[]> {
  if (ports.length === 0) return [];
  const wanted = new Set(ports);
  const ranges = [...wanted].map((p) => ({ lo: p, hi: p }));
  const until = performance.now() + PORT_WAIT_MS;
  for (;;) {
    const rows = readProcTables(procRoot, ranges).rows.filter((r) => wanted.has(r.localPort) && r.inode !== 0);
    const mine = socketsHeldBy(procRoot, self, new Set(rows.map((r) => r.inode)));
    const others = rows.filter((r) => !mine.has(r.inode));
    if (others.length === 0) return [];
    if (performance.now() >= until) {
      const owners = findSocketOwners(procRoot, new Set(others.map((r) => r.inode)));
      return others.map((row) => {
        const o = owners.get(row.inode);
        return {
          row,
          holder: o && o.length > 0 ? o.map((x) => `pid ${x.pid} (${x.cmdline.join(' ') || x.comm || '?'})`).join(', ') : `uid ${row.uid}, holder not visible`,
        };
      });
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
