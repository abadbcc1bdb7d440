import { spawn, type ChildProcess } from 'node:child_process';
import type net from 'node:net';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { isSingleExecutable } from '../util/self.js';
import { formatMessage, parseIpc, type IpcMessage, type WatchMessage } from './watchdog-protocol.js';

/*
 * berth's side of its watchdog (watchdog-process.ts has the other side and the reasons).
 * Node cannot ask the kernel to signal berth's children when berth dies (PR_SET_PDEATHSIG),
 * so one small process per berth process, started with the first launch, in a session of
 * its own (a Ctrl-C or a signal to berth's process group does not reach it), listens on a
 * pipe that only berth can write: the pipe's end of file is berth's death, however it died.
 * berth registers each launch (its marker before the spawn, its pid right after) and each
 * stack's run directory, and ends them when it has cleaned up itself; a watchdog that died
 * is started again and told everything still registered.
 *
 * Leases (allocate/lease-domain.ts) live as long as a process holds their sockets, and the
 * services must keep theirs while the watchdog stops them after berth died: each launch's
 * lease sockets are sent to the watchdog over an IPC channel (SCM_RIGHTS), and it closes
 * them when the launch ends, or, after berth's death, once the launch is stopped. When a
 * launch ends berth waits for the watchdog to say it closed them (at most ACK_MS; a watchdog
 * that does not answer is killed, which closes them too): when berth exits, the names of
 * every lease it held are gone, and the next allocator (the next line of a batch script)
 * finds the ports free.
 *
 * Where it is: dist/watchdog.cjs, next to the bundle that runs (the CLI's command bundles in
 * dist/cli/, the library's dist/index.js), or the single executable itself (`up --watchdog`).
 * Code run from the TypeScript sources (tsx) has no bundle next to it and runs without a
 * watchdog unless useWatchdogEntry() names one.
 */

const RESPAWN_LIMIT = 3;
/** How long berth waits for the watchdog to say it closed a launch's lease sockets (about 1 ms when it is alive; its start-up, when the launch was that short). */
const ACK_MS = 1_000;
/** After killing an unresponsive watchdog, how long to wait for the kernel to close its descriptors. */
const KILL_WAIT_MS = 1_000;

let entryOverride: string | null | undefined;

/** Tests running from sources: the built watchdog to use (null: none). */
export function useWatchdogEntry(path: string | null): void {
  entryOverride = path;
}

/** How to start the watchdog, undefined when there is none to start. */
function watchdogArgv(): string[] | undefined {
  const pid = String(process.pid);
  if (entryOverride !== undefined) return entryOverride === null ? undefined : [process.execPath, entryOverride, pid];
  // The single executable has no files next to it: it is its own watchdog (util/self.ts).
  if (isSingleExecutable()) return [process.execPath, 'up', '--watchdog', pid];
  if (typeof __dirname !== 'string') return undefined;
  for (const dir of [__dirname, join(__dirname, '..')]) {
    const p = join(dir, 'watchdog.cjs');
    if (existsSync(p)) return [process.execPath, p, pid];
  }
  return undefined;
}

class Watchdog {
  private child: ChildProcess | undefined;
  /** What a new watchdog must be told: registration key → its messages so far. */
  private readonly live = new Map<string, string[]>();
  /** Lease sockets of live launches, by id: sent again to a new watchdog. */
  private readonly leases = new Map<string, net.Server[]>();
  /** Lease sockets written to the current watchdog, by launch id: what it must have closed before it answers. */
  private readonly sent = new Map<string, number>();
  /** Launches waiting for the watchdog's 'released'. */
  private readonly acks = new Map<string, () => void>();
  private respawns = 0;
  private warned = false;
  /** Lines not written yet: 'pid' and 'member' wait for the end of the turn (see say). */
  private pending = '';
  private flushSoon: NodeJS.Immediate | undefined;

  say(key: string, m: WatchMessage): void {
    const line = formatMessage(m);
    const ending = m.op === 'end' || m.op === 'runDirEnd';
    if (ending) {
      this.leases.delete(key);
      if (!this.live.delete(key)) return;
    } else {
      const lines = this.live.get(key);
      if (lines) lines.push(line);
      else this.live.set(key, [line]);
    }
    if (!this.child) {
      if (!ending) this.start(); // tells the new watchdog everything registered, this included
      return;
    }
    this.pending += line;
    // Each write wakes the watchdog, and on a busy host a wake-up can cost berth its time
    // slice (docs/scale.md §2: 6–9% of a 16-replica start). 'pid' and 'member' wait for the
    // end of the turn and go out together; 'run' (before the spawn: the marker is what finds
    // the service after a SIGKILL of berth) and the ends go at once, with whatever waits.
    if (m.op === 'pid' || m.op === 'member') this.flushSoon ??= setImmediate(() => this.flush());
    else this.flush();
  }

  private flush(): void {
    if (this.flushSoon !== undefined) clearImmediate(this.flushSoon);
    this.flushSoon = undefined;
    const text = this.pending;
    this.pending = '';
    if (text !== '') this.child?.stdin?.write(text);
  }

  /** Hand the launch's lease sockets to the watchdog; resolves once they are on their way (in the kernel's hands). */
  hold(id: string, handles: readonly net.Server[]): Promise<void> {
    if (handles.length === 0) return Promise.resolve();
    this.leases.set(id, [...handles]);
    return this.send(id, handles);
  }

  private send(id: string, handles: readonly net.Server[]): Promise<void> {
    this.flush(); // the IPC channel is another path: what was said goes first
    const child = this.child;
    if (!child?.connected) return Promise.resolve();
    const count = (d: number) => this.child === child && this.sent.set(id, (this.sent.get(id) ?? 0) + d);
    return Promise.all(
      handles.map(
        (h) =>
          new Promise<void>((resolve) => {
            try {
              // The callback comes once the descriptor is written to the channel: from then on it is the watchdog's too.
              const m: IpcMessage = { op: 'lease', id };
              child.send(m, h, (err) => {
                if (err) count(-1); // a watchdog gone meanwhile: berth still holds the lease itself
                resolve();
              });
              count(1);
            } catch {
              resolve();
            }
          }),
      ),
    ).then(() => undefined);
  }

  /**
   * After the launch's 'end': resolves once the watchdog holds none of its lease sockets any
   * more: it said so, or it exited, or it did not answer within ACK_MS and was killed.
   */
  async release(id: string): Promise<void> {
    this.flush();
    const child = this.child;
    const leases = this.sent.get(id) ?? 0;
    this.sent.delete(id);
    if (!child || leases === 0) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const answered = await new Promise<boolean>((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.acks.delete(id);
        resolve(ok);
      };
      const timer = setTimeout(() => done(false), ACK_MS);
      this.acks.set(id, () => done(true));
      void exited.then(() => done(true));
      try {
        const m: IpcMessage = { op: 'release', id, leases };
        child.send(m, undefined, {}, (err) => err && done(false));
      } catch {
        done(false);
      }
    });
    if (answered) return;
    // Unresponsive (or its channel is gone): its descriptors close with it. While other
    // launches live, the 'exit' handler starts another one and sends it theirs.
    child.kill('SIGKILL');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise<void>((r) => (timer = setTimeout(r, KILL_WAIT_MS)))]);
    clearTimeout(timer);
  }

  private start(): void {
    const argv = watchdogArgv();
    if (argv === undefined) return;
    let child: ChildProcess;
    try {
      child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ['pipe', 'ignore', 'ignore', 'ipc'], cwd: '/' });
    } catch {
      return; // no watchdog (out of processes): berth still cleans up when it can
    }
    this.child = child;
    this.sent.clear();
    child.on('message', (m: unknown) => {
      const msg = parseIpc(m);
      if (msg?.op === 'released') this.acks.get(msg.id)?.();
    });
    child.on('error', (e: NodeJS.ErrnoException) => this.warn(argv[0]!, e.code ?? e.message));
    child.stdin!.on('error', () => {});
    child.on('exit', (code, signal) => {
      if (this.child !== child) return;
      this.child = undefined;
      // It died while berth lives (killed by hand, OOM): start another one for what is still running.
      if (this.live.size === 0) return;
      if (this.respawns++ < RESPAWN_LIMIT) this.start();
      else this.warn(argv[0]!, `it exited ${RESPAWN_LIMIT + 1} times, last ${signal ? `by ${signal}` : `with status ${code}`}`);
    });
    // berth must not wait for its watchdog: it ends when berth does.
    child.unref();
    (child.stdin as unknown as { unref?: () => void }).unref?.();
    (child.channel as unknown as { unref?: () => void } | null | undefined)?.unref?.();
    // Everything registered, in one write (what was pending is in it).
    this.pending = [...this.live.values()].flat().join('');
    this.flush();
    for (const [id, handles] of this.leases) void this.send(id, handles);
  }

  /**
   * Said once: berth runs on without a watchdog, but a SIGKILL of berth would then leave its
   * services running. Seen when the kernel cannot run berth's own file again (an aarch64
   * binary under qemu-user without binfmt_misc: execve fails and exec falls back to sh).
   */
  private warn(program: string, why: string): void {
    if (this.warned) return;
    this.warned = true;
    try {
      process.stderr.write(`berth: warning: its watchdog (${program}) does not run (${why}); if berth is killed with SIGKILL, its services are not stopped for it\n`);
    } catch {
      /* stderr closed: nothing to tell */
    }
  }
}

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
    holdLeases: (handles) => w.hold(id, handles),
    spawned: (pid, start) => w.say(id, { op: 'pid', id, pid, start }),
    member: (pid, start) => w.say(id, { op: 'member', id, pid, start }),
    ended: () => {
      w.say(id, { op: 'end', id });
      return w.release(id);
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
