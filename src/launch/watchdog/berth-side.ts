import { spawn, type ChildProcess } from 'node:child_process';
import { LeaseHandoff } from './lease-handoff.js';
import { watchdogArgv } from './program.js';
import { formatMessage, type WatchMessage } from './protocol.js';

/* berth's side of its watchdog (protocol.ts says what they say and why; watch.ts is the other side). */

const RESPAWN_LIMIT = 3;

export class Watchdog {
  private child: ChildProcess | undefined;
  /** What a new watchdog must be told: registration key → its messages so far. */
  private readonly live = new Map<string, string[]>();
  readonly leases = new LeaseHandoff(
    () => this.child,
    () => this.flush(),
  );
  private respawns = 0;
  private warned = false;
  /** Lines not written yet: 'pid' and 'member' wait for the end of the turn (see say). */
  private pending = '';
  private flushSoon: NodeJS.Immediate | undefined;

  say(key: string, m: WatchMessage): void {
    const line = formatMessage(m);
    const ending = m.op === 'end' || m.op === 'runDirEnd';
    if (ending) {
      this.leases.forget(key);
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
    // Everything registered, in one write (what was pending is in it), then the lease sockets.
    this.pending = [...this.live.values()].flat().join('');
    this.flush();
    this.leases.started(child);
  }

  /** Said once. Seen when the kernel cannot run berth's own file again (an aarch64 binary under qemu-user without binfmt_misc). */
  private warn(program: string, why: string): void {
    if (this.warned) return;
    this.warned = true;
    try {
      process.stderr.write(
        `berth: warning: its watchdog (${program}) does not run (${why}); if berth is killed with SIGKILL, its services are not stopped for it\n`,
      );
    } catch {
      /* stderr closed: nothing to tell */
    }
  }
}
