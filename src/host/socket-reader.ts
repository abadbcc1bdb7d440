import type * as ChildProcess from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { normalizeRanges } from './intervals.js';
import { tryRead } from './proc-read.js';
import { readProcTables } from './read-tables.js';
import { parseSsOutput, ssArgs } from './ss-output.js';
import { killGroup, SsShell } from './ss-shell.js';
import type { PortRange, SocketRow } from './host-map.js';

/*
 * /proc/net/tcp{,6} makes the kernel format every socket (≈ 150 ms at 50,000), so a filtered read of
 * a big table (SS_MIN_ROWS, from sockstat) asks sock_diag through `ss` (Node has no netlink), which
 * formats only the matches. Where `ss` fails, is late (SS_DEADLINE_MS; its group is killed) or prints
 * a line that does not parse (left-out rows would read as free ports), berth reads /proc and gives
 * `ss` up in this process. `ss` reads the caller's namespace: only the real /proc may use it.
 */

export type ReaderChoice = 'auto' | 'ss' | 'proc';

/** Sockets (tcp + tcp6 in use, plus TIME_WAIT) from which `ss` is used: a 100-port read costs the same both ways near 10,000 (docs/scale.md §2). */
export const SS_MIN_ROWS = 10_000;

export interface ReadSocketsOptions {
  /** Root of the proc filesystem. Default '/proc'; any other root is always read as files. */
  procRoot?: string;
  /** Only sockets whose local port lies in these ranges. */
  localPorts?: readonly PortRange[];
  /** Only LISTEN sockets (with `udp`, also unconnected UDP sockets: UDP's listeners). */
  listenOnly?: boolean;
  /** Read UDP sockets too (/proc/net/udp{,6}; `ss -u`): each row says its protocol. */
  udp?: boolean;
  /** 'auto' (default): `ss` from SS_MIN_ROWS sockets on, else /proc; 'ss': `ss` whenever it works; 'proc': /proc only. Default from BERTH_SOCKET_READER. */
  via?: ReaderChoice;
  /** The `ss` to run (tests); default 'ss' from PATH. */
  ssPath?: string;
}

export interface SocketRead {
  rows: SocketRow[];
  /** Lines that did not parse (a table read while sockets come and go can end mid-row). */
  skipped: number;
  via: 'ss' | 'proc';
  /** Whether the kernel has IPv6 TCP (tcp6 exists). */
  ipv6: boolean;
}

let ssBroken: string | undefined;

/** Why `ss` was given up in this process (for diagnostics and tests). */
export function ssUnusable(): string | undefined {
  return ssBroken;
}

/** Forget an earlier failure of `ss` (tests). */
export function resetSsUnusable(): void {
  ssBroken = undefined;
}

function envChoice(): ReaderChoice {
  const v = process.env.BERTH_SOCKET_READER;
  return v === 'ss' || v === 'proc' ? v : 'auto';
}

/** The number after `key` on a sockstat line ("TCP: inuse 5 orphan 0 tw 2 …"), 0 when absent. */
function counter(text: string, line: string, key: string): number {
  const at = text.indexOf(`${line}:`);
  if (at < 0) return 0;
  const end = text.indexOf('\n', at);
  const fields = text.slice(at, end < 0 ? undefined : end).split(' ');
  const k = fields.indexOf(key);
  const v = k < 0 ? NaN : Number(fields[k + 1]);
  return Number.isFinite(v) ? v : 0;
}

/** Rows a full /proc read would format, from /proc/net/sockstat{,6} (TCP in use and TIME_WAIT; UDP with `udp`); undefined when unreadable. */
export function tableSize(procRoot = '/proc', udp = false): number | undefined {
  const v4 = tryRead(join(procRoot, 'net', 'sockstat'), 'latin1');
  if (v4 === undefined) return undefined;
  const v6 = tryRead(join(procRoot, 'net', 'sockstat6'), 'latin1') ?? ''; // '': no IPv6
  const tcp = counter(v4, 'TCP', 'inuse') + counter(v4, 'TCP', 'tw') + counter(v6, 'TCP6', 'inuse');
  return udp ? tcp + counter(v4, 'UDP', 'inuse') + counter(v6, 'UDP6', 'inuse') : tcp;
}

function useSs(procRoot: string, opts: ReadSocketsOptions): boolean {
  if (procRoot !== '/proc' || ssBroken !== undefined) return false;
  const choice = opts.via ?? envChoice();
  if (choice === 'proc') return false;
  if (choice === 'ss') return true;
  // An unfiltered read of every state gains nothing from the kernel's filter.
  if (opts.localPorts === undefined && opts.listenOnly !== true) return false;
  const size = tableSize(procRoot, opts.udp === true);
  return size !== undefined && size >= SS_MIN_ROWS;
}

let childProcess: typeof ChildProcess | undefined;

/** Loaded on first use (`berth port` on a quiet host needs none of it); createRequire: the sync read cannot await, the single executable cannot import(). */
function cp(): typeof ChildProcess {
  if (childProcess === undefined) {
    const req = typeof require === 'function' ? require : createRequire(process.cwd() + '/');
    childProcess = req('node:child_process') as typeof ChildProcess;
  }
  return childProcess;
}

/** How long one `ss` may take before it is given up for /proc (it answers in 20-40 ms at 50,000 sockets, a few hundred ms on a loaded host). */
export const SS_DEADLINE_MS = 2_000;

// detached: `ss` (or what runs as it) leads a process group of its own, which is killed
// whole at the deadline: a wrapper's children would otherwise hold its pipes and live on.
const SS_OPTIONS = { encoding: 'latin1', maxBuffer: 1 << 30, detached: true } as const;

interface SsExit {
  error?: Error | undefined;
  timedOut?: boolean;
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

interface Query {
  ports: PortRange[] | undefined;
  listenOnly: boolean;
  udp: boolean;
}

function listening(r: SocketRow): boolean {
  return r.protocol === 'udp' ? r.state === 'CLOSE' : r.state === 'LISTEN';
}

/** The rows from `ss`, or undefined (and ss given up) when it could not answer. */
function fromSs(r: SsExit, q: Query, ssPath: string): SocketRead | undefined {
  if (r.timedOut === true || r.error !== undefined || r.status !== 0) {
    const why =
      r.timedOut === true
        ? `no answer within ${SS_DEADLINE_MS} ms (killed)`
        : r.signal !== null
          ? `killed by ${r.signal}`
          : r.status !== 0 && r.status !== null
            ? `exit ${r.status}: ${r.stderr.trim().split('\n')[0] ?? ''}`
            : (r.error?.message ?? 'failed');
    ssBroken = `${ssPath}: ${why}`;
    return undefined;
  }
  // With UDP a listen-only read names two states, so ss prints the state column.
  const how = q.listenOnly && !q.udp ? { onlyState: 'LISTEN' as const } : {};
  const parsed = parseSsOutput(r.stdout, how);
  // ss writes each line whole (no table read mid-change): one that does not parse is not an ss berth understands.
  if (parsed.skipped > 0) {
    const bad = r.stdout.split('\n').find((l) => l.trim() !== '' && parseSsOutput(l, how).skipped > 0) ?? '';
    ssBroken = `${ssPath}: ${parsed.skipped} line(s) of its output did not parse (first: ${JSON.stringify(bad.slice(0, 80))})`;
    return undefined;
  }
  const rows = q.listenOnly && q.udp ? parsed.rows.filter(listening) : parsed.rows;
  return { rows, skipped: parsed.skipped, via: 'ss', ipv6: existsSync('/proc/net/tcp6') };
}

function readViaSs(q: Query, ssPath: string): SocketRead | undefined {
  const r = cp().spawnSync(ssPath, ssArgs(q.ports, q.listenOnly, q.udp), {
    ...SS_OPTIONS,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: SS_DEADLINE_MS,
    killSignal: 'SIGKILL',
  });
  const timedOut = (r.error as NodeJS.ErrnoException | undefined)?.code === 'ETIMEDOUT';
  // spawnSync killed `ss` itself; whatever it started is in its group.
  if (timedOut || r.signal !== null) killGroup(r.pid);
  return fromSs({ error: r.error, timedOut, status: r.status, signal: r.signal, stdout: String(r.stdout), stderr: String(r.stderr) }, q, ssPath);
}

function spawnSsAsync(args: string[], q: Query, ssPath: string): Promise<SocketRead | undefined> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let size = 0;
    let settled = false;
    const done = (r: SsExit) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(fromSs(r, q, ssPath));
    };
    const child = cp().spawn(ssPath, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => {
      killGroup(child.pid);
      done({ timedOut: true, status: null, signal: 'SIGKILL', stdout: '', stderr: '' });
    }, SS_DEADLINE_MS);
    child.stdout!.setEncoding('latin1').on('data', (d: string) => {
      size += d.length;
      if (size > SS_OPTIONS.maxBuffer) {
        killGroup(child.pid);
        done({ error: new Error('output too large'), status: null, signal: null, stdout: '', stderr: '' });
      } else stdout += d;
    });
    child.stderr!.setEncoding('latin1').on('data', (d: string) => {
      if (stderr.length < 4096) stderr += d; // its first line is all a message shows
    });
    child.on('error', (error) => done({ error, status: null, signal: null, stdout, stderr }));
    // 'close': its output is complete (not only its exit).
    child.on('close', (status, signal) => done({ status, signal, stdout, stderr }));
  });
}

/** Starts `ss` for the asynchronous reads (ss-shell.ts); null once it failed. */
let shell: SsShell | undefined | null;

async function readViaSsAsync(q: Query, ssPath: string): Promise<SocketRead | undefined> {
  const args = ssArgs(q.ports, q.listenOnly, q.udp);
  if (shell === undefined) {
    try {
      shell = new SsShell(cp());
    } catch {
      shell = null;
    }
  }
  if (shell?.usable) {
    const sh = shell;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), SS_DEADLINE_MS)));
    try {
      const a = await Promise.race([sh.run(ssPath, args), late]);
      if (a === 'late') {
        // The shell and the `ss` it waits for are one process group: both go, and so does ss.
        sh.kill();
        shell = null;
        return fromSs({ timedOut: true, status: null, signal: 'SIGKILL', stdout: '', stderr: '' }, q, ssPath);
      }
      if (a.status === 0) return fromSs({ status: 0, signal: null, stdout: a.stdout, stderr: '' }, q, ssPath);
      // ss failed: its own spawn below says why, and gives it up.
    } catch {
      shell = null;
    } finally {
      clearTimeout(timer);
    }
  }
  return spawnSsAsync(args, q, ssPath);
}

/** The filter normalized, and an empty answer when it matches no port. */
function prepare(opts: ReadSocketsOptions): { procRoot: string; q: Query; empty?: SocketRead } {
  const procRoot = opts.procRoot ?? '/proc';
  const ports = opts.localPorts === undefined ? undefined : normalizeRanges(opts.localPorts);
  const q: Query = { ports, listenOnly: opts.listenOnly === true, udp: opts.udp === true };
  if (ports !== undefined && ports.length === 0)
    return { procRoot, q, empty: { rows: [], skipped: 0, via: 'proc', ipv6: existsSync(join(procRoot, 'net', 'tcp6')) } };
  return { procRoot, q };
}

function readProc(procRoot: string, q: Query): SocketRead {
  const t = readProcTables(procRoot, q.ports, q.udp);
  const rows = q.listenOnly ? t.rows.filter(listening) : t.rows;
  return { rows, skipped: t.skipped, via: 'proc', ipv6: t.ipv6 };
}

/** TCP (and with `udp`, UDP) sockets of this network namespace, filtered as asked, from `ss` or /proc (see above). */
export function readSockets(opts: ReadSocketsOptions = {}): SocketRead {
  const { procRoot, q, empty } = prepare(opts);
  if (empty !== undefined) return empty;
  if (useSs(procRoot, opts)) {
    const got = readViaSs(q, opts.ssPath ?? 'ss');
    if (got !== undefined) return got;
  }
  return readProc(procRoot, q);
}

/**
 * readSockets for callers that supervise other work meanwhile (the launch's pollers): spawnSync of
 * ss was 15% of berth's main thread with 16 replicas starting, so `ss` runs from a shell berth keeps
 * (ss-shell.ts). The /proc read stays synchronous: it is used only where cheap or where `ss` failed.
 */
export async function readSocketsAsync(opts: ReadSocketsOptions = {}): Promise<SocketRead> {
  const { procRoot, q, empty } = prepare(opts);
  if (empty !== undefined) return empty;
  if (useSs(procRoot, opts)) {
    const got = await readViaSsAsync(q, opts.ssPath ?? 'ss');
    if (got !== undefined) return got;
  }
  return readProc(procRoot, q);
}
