import type { WatchMessage } from './protocol.js';

/** One launch as the watchdog knows it: what finds its process tree once berth is gone. */
export interface Run {
  marker: string;
  graceMs: number;
  /** The launch's cgroup: everything in it is the run's, escaped daemons included. */
  cgroup?: string;
  pid?: number;
  start?: number;
  members: { pid: number; start: number }[];
}

/** What the watchdog knows when berth is gone. */
export interface WatchState {
  runs: Map<string, Run>;
  runDirs: Set<string>;
}

export function applyMessage(s: WatchState, m: WatchMessage): void {
  switch (m.op) {
    case 'run':
      s.runs.set(m.id, { marker: m.marker, graceMs: m.graceMs, members: [], ...(m.cgroup !== undefined ? { cgroup: m.cgroup } : {}) });
      break;
    case 'pid': {
      const r = s.runs.get(m.id);
      if (r) Object.assign(r, { pid: m.pid, start: m.start });
      break;
    }
    case 'member':
      s.runs.get(m.id)?.members.push({ pid: m.pid, start: m.start });
      break;
    case 'end':
      s.runs.delete(m.id);
      break;
    case 'runDir':
      s.runDirs.add(m.path);
      break;
    case 'runDirEnd':
      s.runDirs.delete(m.path);
      break;
  }
}
