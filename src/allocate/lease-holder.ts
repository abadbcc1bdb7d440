import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { BerthError, EXIT } from '../errors.js';
import { tryRead } from '../host/proc-read.js';
import { descriptorError } from './lease-domain.js';

/*
 * `berth port --owner PID` and `--ttl DUR` exit at once, so their lease names (fds 3…) go to a
 * coreutils holder (about 1 MiB, not a Node.js runtime): `tail --pid=PID -s 0.2 -f /dev/null`,
 * `sleep SECONDS`, or `timeout SECONDS tail …`, with argv[0] HOLDER_ARGV0 for `berth release`. Its
 * own session (a Ctrl-C is not for it), stdio on /dev/null: `$(berth port --owner $$)` does not
 * wait. The programs are the system's by absolute path (a PATH `sleep` that rejects "600.000"
 * would drop the lease while berth printed the port), and the holder is seen sleeping in the
 * kernel before the lease is reported.
 */

export const HOLDER_ARGV0 = 'berth-lease-holder';

/** How often tail looks whether the owner lives, in seconds. */
const OWNER_POLL_S = '0.2';

export interface HolderSpec {
  ownerPid?: number;
  /** The owner's start time when it was checked (a live process then): it must still be that process once the holder runs. */
  ownerStart?: number;
  ttlMs?: number;
}

function seconds(ms: number): string {
  return (Math.max(ms, 1) / 1000).toFixed(3);
}

/** Where the system's coreutils are (the last for NixOS). */
const SYSTEM_DIRS = ['/usr/bin', '/bin', '/run/current-system/sw/bin'];

/** Absolute path of the system's `name`, or the bare name (left to PATH) when none is found. */
export function systemTool(name: string): string {
  for (const dir of SYSTEM_DIRS) {
    const path = join(dir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not there
    }
  }
  return name;
}

/** The holder's program and arguments; `tool` names a program's path. Pure with a pure `tool`. */
export function holderCommand(h: HolderSpec, tool: (name: string) => string = systemTool): [string, string[]] {
  const tail = ['--pid=' + String(h.ownerPid), '-s', OWNER_POLL_S, '-f', '/dev/null'];
  if (h.ownerPid !== undefined && h.ttlMs !== undefined) return [tool('timeout'), [seconds(h.ttlMs), tool('tail'), ...tail]];
  if (h.ownerPid !== undefined) return [tool('tail'), tail];
  if (h.ttlMs !== undefined) return [tool('sleep'), [seconds(h.ttlMs)]];
  throw new BerthError(EXIT.SOFTWARE, 'a lease holder needs an owner or a ttl');
}

/** Start a holder of `fds` (its fds 3, 4, …); once resolved, the caller may close its own copies. */
export function spawnHolder(fds: readonly number[], h: HolderSpec): Promise<ChildProcess> {
  const [cmd, args] = holderCommand(h);
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      // Only PATH (system directories last, for a trimmed PATH) and the Slurm ids: a token would stay
      // readable in /proc/PID/environ for the lease's life, and a run's environment mark would count it.
      // `berth release --job` ends only holders whose environment, as the kernel shows it, names the job.
      const env: NodeJS.ProcessEnv = { PATH: [process.env.PATH, '/usr/bin', '/bin'].filter(Boolean).join(':'), LC_ALL: 'C' };
      for (const k of ['SLURM_JOB_ID', 'SLURM_STEP_ID']) if (process.env[k]) env[k] = process.env[k];
      child = spawn(cmd, args, { argv0: HOLDER_ARGV0, detached: true, stdio: ['ignore', 'ignore', 'ignore', ...fds], cwd: '/', env });
    } catch (e) {
      reject(failure(e, cmd));
      return;
    }
    child.once('error', (e) => reject(failure(e, cmd)));
    child.once('spawn', () => {
      child.unref();
      waiting(child, h).then(() => resolve(child), reject);
    });
  });
}

/** How long a holder may take to be seen waiting; one still alive then is taken as running (a loaded host). */
const CONFIRM_MS = 2000;

/** State letter of /proc/PID/stat (after the command name, which may hold ')'), or undefined when gone. */
function stateOf(pid: number): string | undefined {
  const stat = tryRead(`/proc/${pid}/stat`, 'latin1');
  return stat?.[stat.lastIndexOf(')') + 2];
}

/** The only child of timeout (its tail), when /proc lists it. */
function childOf(pid: number): number | undefined {
  const first = tryRead(`/proc/${pid}/task/${pid}/children`, 'latin1')?.trim().split(' ')[0];
  return first ? Number(first) : undefined;
}

/** Resolves once the holder (and timeout's tail) sleeps in the kernel (state S); rejects when it has exited instead. */
function waiting(child: ChildProcess, h: HolderSpec): Promise<void> {
  const pid = child.pid!;
  const withChild = h.ownerPid !== undefined && h.ttlMs !== undefined;
  const start = Date.now();
  return new Promise((resolve, reject) => {
    const look = () => {
      if (child.exitCode !== null || child.signalCode !== null) {
        const how = child.exitCode !== null ? `status ${child.exitCode}` : child.signalCode;
        // tail --pid ends at once when its owner has: that is the likely cause, and not berth's fault.
        const owner =
          h.ownerPid !== undefined && stateOf(h.ownerPid) === undefined
            ? `: owner pid ${h.ownerPid} ended before its lease was made`
            : ', so it could not hold the lease';
        reject(new BerthError(EXIT.UNAVAILABLE, `the lease holder (${child.spawnfile}) exited at once (${how})${owner}; nothing was leased`));
        return;
      }
      const inner = withChild ? childOf(pid) : undefined;
      const asleep = stateOf(pid) === 'S' && (!withChild || (inner !== undefined && stateOf(inner) === 'S'));
      if (asleep || Date.now() - start > CONFIRM_MS) resolve();
      else setTimeout(look, 1);
    };
    look();
  });
}

function failure(e: unknown, cmd: string): BerthError {
  const code = (e as NodeJS.ErrnoException).code ?? '';
  if (code === 'EMFILE' || code === 'ENFILE') return descriptorError(code, 'starting the lease holder');
  if (code === 'ENOENT')
    return new BerthError(
      EXIT.UNAVAILABLE,
      `cannot start the lease holder: ${cmd} is not on PATH (berth holds --owner/--ttl leases with coreutils' tail, sleep and timeout); install ` +
        `coreutils; nothing was leased`,
    );
  return new BerthError(EXIT.IOERR, `cannot start the lease holder (${cmd}): ${code || (e as Error).message}; nothing was leased`);
}

/** End a holder we started (Node reaps it, so its pid is not another's yet) and wait, at most a second, for it to be gone. */
export function endHolder(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    // Referenced: the holder was unref'd, so a caller awaiting release() alone would see its loop run dry (exit 13).
    const timer = setTimeout(resolve, 1000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    try {
      child.kill('SIGTERM');
    } catch {
      clearTimeout(timer);
      resolve(); // gone meanwhile
    }
  });
}
