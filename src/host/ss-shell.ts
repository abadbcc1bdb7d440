import type * as ChildProcess from 'node:child_process';

/*
 * `ss` run by a /bin/sh that berth keeps for its lifetime, for the asynchronous reads of `up` and
 * `run` (ownership poller, listener audit). libuv's spawn() returns only once the child has exec'd,
 * so each spawn from berth's big process stalled its event loop ~20 ms on a loaded host, a read
 * every few tens of ms while replicas start (docs/scale.md §2); the shell's fork costs berth nothing.
 *
 * Protocol: one line per read on stdin, `'ss' 'arg'… 2>/dev/null; printf …`, answered in order by
 * ss's output and a line `<MARK> <exit status>`. Arguments (ssArgs') are single-quoted; one holding
 * a quote is refused. The shell has its own session (berth's Ctrl-C is not for it) and exits when
 * its stdin closes, however berth exits. Any failure rejects the waiting reads; the caller then
 * spawns `ss` itself.
 */

const MARK = '@@berth-ss-end';

export interface ShellAnswer {
  status: number;
  stdout: string;
}

interface Waiting {
  resolve: (a: ShellAnswer) => void;
  reject: (e: Error) => void;
}

/** SIGKILL the process group `pid` leads. */
export function killGroup(pid: number | undefined): void {
  if (pid === undefined || pid <= 0) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // gone
  }
}

function quote(arg: string): string {
  if (arg.includes("'") || arg.includes('\n') || arg.includes('\0')) throw new Error(`ss-shell: refusing argument ${JSON.stringify(arg)}`);
  return `'${arg}'`;
}

export class SsShell {
  private readonly child: ChildProcess.ChildProcess;
  private readonly waiting: Waiting[] = [];
  private buf = '';
  private dead: Error | undefined;

  constructor(cp: typeof ChildProcess) {
    this.child = cp.spawn('/bin/sh', [], { stdio: ['pipe', 'pipe', 'ignore'], detached: true });
    this.child.stdout!.setEncoding('latin1');
    this.child.stdout!.on('data', (chunk: string) => this.data(chunk));
    this.child.on('error', (e) => this.die(e));
    this.child.on('exit', (code, signal) => this.die(new Error(`the shell exited (${signal ?? code})`)));
    this.child.stdin!.on('error', (e) => this.die(e));
    this.idle();
  }

  /** The shell's pid (tests). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Whether reads can still be asked of it. */
  get usable(): boolean {
    return this.dead === undefined;
  }

  /** ss's stdout and exit status for `args`, run as `ssPath`. */
  run(ssPath: string, args: readonly string[]): Promise<ShellAnswer> {
    if (this.dead) return Promise.reject(this.dead);
    let line: string;
    try {
      line = `${[ssPath, ...args].map(quote).join(' ')} 2>/dev/null; printf '%s %d\\n' '${MARK}' $?\n`;
    } catch (e) {
      return Promise.reject(e as Error);
    }
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.busy();
      this.child.stdin!.write(line);
    });
  }

  /** End the shell and whatever it runs now (its process group: the shell leads it). */
  kill(): void {
    killGroup(this.child.pid);
    this.die(new Error('killed: a read ran past its deadline'));
  }

  private data(chunk: string): void {
    this.buf += chunk;
    for (;;) {
      const at = this.buf.startsWith(MARK) ? 0 : this.buf.indexOf(`\n${MARK}`);
      if (at < 0) return;
      const start = at === 0 ? 0 : at + 1;
      const end = this.buf.indexOf('\n', start);
      if (end < 0) return;
      const status = Number(this.buf.slice(start + MARK.length + 1, end));
      const stdout = this.buf.slice(0, start);
      this.buf = this.buf.slice(end + 1);
      const w = this.waiting.shift();
      if (this.waiting.length === 0) this.idle();
      w?.resolve({ status: Number.isInteger(status) ? status : -1, stdout });
    }
  }

  private die(e: Error): void {
    if (this.dead) return;
    this.dead = e;
    for (const w of this.waiting.splice(0)) w.reject(e);
    try {
      this.child.kill('SIGKILL');
    } catch {
      // gone
    }
  }

  /** Waiting reads keep berth alive; an idle shell does not. */
  private busy(): void {
    this.child.ref();
    (this.child.stdout as unknown as { ref?: () => void }).ref?.();
  }

  private idle(): void {
    this.child.unref();
    (this.child.stdout as unknown as { unref?: () => void }).unref?.();
    (this.child.stdin as unknown as { unref?: () => void }).unref?.();
  }
}
