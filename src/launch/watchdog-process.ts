import type { EventEmitter } from 'node:events';
import type net from 'node:net';
import { removeCgroup } from '../host/cgroup.js';
import { ProcessTree } from './process-tree.js';
import { parseIpc, parseMessage, type IpcMessage, type WatchMessage } from './watchdog-protocol.js';

/*
 * The watchdog's side (one process per berth process, started by watchdog.ts). It reads what
 * berth tells it until the pipe reaches end of file. berth is the pipe's only writer, so the
 * kernel closes it whenever berth goes away, SIGKILL and OOM included. Launches that berth
 * ended itself were reported as ended; whatever is still registered then is stopped as berth
 * would have: SIGTERM to every process of the run's tree (its process group, its session,
 * descendants, every process carrying the run's marker in its environment: double-forked
 * daemons, and every process in the run's cgroup: daemons that also cleared it), looked for
 * again every 50 ms so late forks are caught too, then SIGKILL once the service's grace has
 * passed; then the run's cgroup is removed. Processes are signalled one by one, after checking their start
 * time, never by a process group number that may have been reused.
 *
 * It also holds each launch's lease sockets (sent over the IPC channel, watchdog.ts): a
 * lease lives as long as a process holds it, and it must outlive berth exactly as long as
 * the launch's service is being stopped. They are closed when berth says the launch ended
 * (in whichever order the two channels deliver), or once it is stopped. berth also asks over
 * the IPC channel ('release') and waits for the answer ('released') before it exits, so
 * no name of its leases is left behind it, not even for the few ms the pipe takes.
 */

const POLL_MS = 50;
/** Keep looking this long even when nothing is found: berth may have died while a spawn was exec'ing. */
const SETTLE_MS = 250;
/** After SIGKILL, how long to keep trying before giving up on an unkillable process (D state). */
const KILL_PATIENCE_MS = 5_000;

interface Run {
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

export function emptyState(): WatchState {
  return { runs: new Map(), runDirs: new Set() };
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

export interface StopReport {
  /** Processes signalled. */
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
export async function stopRun(run: Run, procRoot = '/proc'): Promise<StopReport> {
  const tree = new ProcessTree(procRoot, run.pid ?? -1, run.marker, [], { rootStart: run.start ?? 0, ...(run.cgroup !== undefined ? { cgroup: run.cgroup } : {}) });
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

export interface WatchOptions {
  procRoot?: string;
  /** Where lease sockets arrive ('message' events with a handle); default this process's IPC channel, if any. */
  ipc?: EventEmitter;
  /** How to answer berth on that channel; default process.send. */
  reply?: (m: IpcMessage) => void;
  /** After every run is stopped: the stacks' run directories to mark (berth is gone). */
  afterStop?: (runDirs: string[]) => void;
}

/**
 * Reads berth's messages from `input` until end of file, then stops what is left. Resolves
 * with what it found left over (empty when berth ended every launch itself).
 */
export function watch(input: NodeJS.ReadableStream, o: WatchOptions = {}): Promise<StopReport & { runs: number }> {
  const state = emptyState();
  const leases = new Map<string, net.Server[]>();
  const endedRuns = new Set<string>();
  const closeLeases = (id: string) => {
    for (const h of leases.get(id) ?? []) h.close();
    leases.delete(id);
  };
  const ipc = o.ipc ?? ((process as unknown as { channel?: unknown }).channel ? process : undefined);
  const reply = o.reply ?? ((m: IpcMessage) => process.send?.(m, undefined, {}, () => {}));
  // Per launch: lease sockets received so far, and how many berth said it sent once it asked for them to be closed.
  const received = new Map<string, number>();
  const asked = new Map<string, number>();
  const answer = (id: string) => {
    const want = asked.get(id);
    if (want === undefined || (received.get(id) ?? 0) < want) return;
    asked.delete(id);
    reply({ op: 'released', id });
  };
  ipc?.on('message', (m: unknown, h: unknown) => {
    const msg = parseIpc(m);
    if (msg?.op === 'release') {
      endedRuns.add(msg.id);
      closeLeases(msg.id);
      asked.set(msg.id, msg.leases);
      answer(msg.id);
      return;
    }
    if (msg?.op !== 'lease') return;
    // Counted with or without its socket: one that berth closed while it waited in Node's send
    // queue arrives without it (it is gone already).
    received.set(msg.id, (received.get(msg.id) ?? 0) + 1);
    if (h === undefined || h === null) {
      answer(msg.id);
      return;
    }
    const server = h as net.Server;
    server.on('error', () => {});
    server.on('connection', (sock: net.Socket) => sock.destroy());
    if (endedRuns.has(msg.id)) {
      server.close();
      answer(msg.id);
      return;
    }
    const list = leases.get(msg.id);
    if (list) list.push(server);
    else leases.set(msg.id, [server]);
  });
  let partial = '';
  input.setEncoding?.('utf8');
  return new Promise((resolve) => {
    input.on('data', (chunk: string) => {
      const text = partial + chunk;
      const lines = text.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const m = parseMessage(line);
        if (m) applyMessage(state, m);
        if (m?.op === 'end') {
          endedRuns.add(m.id);
          closeLeases(m.id);
        }
      }
    });
    // 'error' too: a reset pipe is berth gone as well.
    let ended = false;
    const onEnd = () => {
      if (ended) return;
      ended = true;
      void (async () => {
        const ids = [...state.runs.keys()];
        const runs = [...state.runs.values()];
        // Each launch's leases end once its service is stopped, not before.
        const reports = await Promise.all(runs.map(async (r, i) => {
          const rep = await stopRun(r, o.procRoot);
          closeLeases(ids[i]!);
          return rep;
        }));
        for (const id of [...leases.keys()]) closeLeases(id);
        try {
          if (state.runDirs.size > 0) o.afterStop?.([...state.runDirs]);
        } catch {
          // a run directory that cannot be rewritten: the dead pid in it still tells readers
        }
        const sum = (k: keyof StopReport) => reports.reduce((a, r) => a + r[k], 0);
        resolve({ runs: runs.length, termed: sum('termed'), killed: sum('killed'), left: sum('left') });
      })();
    };
    input.on('end', onEnd);
    input.on('close', onEnd);
    input.on('error', onEnd);
  });
}
