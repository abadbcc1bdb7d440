import type net from 'node:net';
import { Watchdog } from './berth-side.js';

let shared: Watchdog | undefined;
const watchdog = () => (shared ??= new Watchdog());

/** What a launch tells the watchdog: who its process tree is, and when it has ended. */
export interface RunGuard {
  /** The launch's lease sockets, for the watchdog to hold until the launch ends or is stopped. */
  holdLeases(handles: readonly net.Server[]): Promise<void>;
  spawned(pid: number, start: number): void;
  /** A tree member outside the child's process group (setsid daemons). */
  member(pid: number, start: number): void;
  /** Resolves once the watchdog has closed its copies of the launch's lease sockets (or is gone). */
  ended(): Promise<void>;
}

/** Registers a launch before its spawn: `marker` is the BERTH_RUN_ID=… entry of its environment, `cgroup` the directory its tree is born in. */
export function guardRun(id: string, marker: string, graceMs: number, cgroup?: string): RunGuard {
  const w = watchdog();
  w.say(id, { op: 'run', id, marker, graceMs, ...(cgroup !== undefined ? { cgroup } : {}) });
  return {
    holdLeases: (handles) => w.leases.hold(id, handles),
    spawned: (pid, start) => w.say(id, { op: 'pid', id, pid, start }),
    member: (pid, start) => w.say(id, { op: 'member', id, pid, start }),
    ended: () => {
      w.say(id, { op: 'end', id });
      return w.leases.release(id);
    },
  };
}

/** Registers a stack's run directory; `ended()` once its final endpoints.json is written. */
export function guardRunDir(path: string): { ended(): void } {
  const w = watchdog();
  const key = `dir:${path}`;
  w.say(key, { op: 'runDir', path });
  return { ended: () => w.say(key, { op: 'runDirEnd', path }) };
}
