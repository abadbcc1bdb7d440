import type * as ChildProcess from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { normalizeRanges } from './intervals.js';
import { readProcTables } from './read-tables.js';
import { parseSsOutput, ssArgs } from './ss-output.js';
import { SsShell } from './ss-shell.js';
import type { PortRange, SocketRow } from './host-map.js';

/*
 * Reading only the sockets berth cares about. /proc/net/tcp{,6} makes the kernel format every
 * socket of the namespace however few berth keeps (≈ 150 ms at 50,000 sockets), so a read of a
 * few ports or of the listeners asks sock_diag instead, through iproute2's `ss` with a filter
 * the kernel runs (Node has no netlink sockets): the kernel checks each socket's port against
 * the bytecode and formats only the matches, and for LISTEN only it walks the listening hash
 * alone. `ss` costs a process spawn (a few ms) whatever the table holds, which is more than
 * /proc costs on a quiet host; so each read looks at the table's size first
 * (/proc/net/sockstat{,6}: a few counters, read in microseconds) and uses `ss` only from
 * SS_MIN_ROWS sockets on (bench/busy-host.ts measures both sides). /proc is also the
 * fallback: where `ss` is missing, too old for -O/-H, or sock_diag is refused (its exit
 * status is then not 0), where it does not answer within SS_DEADLINE_MS (a hung `ss` first on
 * PATH, a sock_diag stuck in the kernel: its whole process group is killed), or where any line
 * it printed does not parse (a look-alike that prints something else: rows it left out would
 * read as free ports, so its answer is a failed read, never "no sockets"), berth reads /proc
 * and does not try `ss` again in this process. Both give the same rows
 * (test/host-socket-reader.test.ts compares them on live namespaces).
 *
 * `ss` reads the namespace of the calling process, which is /proc's (/proc/net is
 * /proc/self/net): only a read of the real /proc may use it, never a fixture tree.
 */

export type ReaderChoice = 'auto' | 'ss' | 'proc';

/**
 * Sockets (tcp + tcp6 in use, plus TIME_WAIT) from which `ss` is used. On the benchmark's quiet
 * 2-core machine (bench/busy-host.ts, docs/scale.md §2) a 100-port read cost 1.5 / 11 /
 * 95 ms through /proc at 500 / 5,000 / 50,000 sockets and 18 / 21 / 40 ms through `ss`: the
 * two cross near 10,000.
 */
export const SS_MIN_ROWS = 10_000;

export interface ReadSocketsOptions {
  /** Root of the proc filesystem. Default '/proc'; any other root is always read as files. */
  procRoot?: string;
  /** Only sockets whose local port lies in these ranges. */
  localPorts?: readonly PortRange[];
  /**
   * Only LISTEN sockets (with `udp`, also unconnected UDP sockets: bound to receive from
   * anyone, UDP's listeners).
   */
  listenOnly?: boolean;
  /** Read UDP sockets too (/proc/net/udp{,6}; `ss -u`): each row says its protocol. */
  udp?: boolean;
  /**
   * 'auto' (default): `ss` from SS_MIN_ROWS sockets on, else /proc; 'ss': `ss` whenever it
   * works (filtered or not); 'proc': /proc only. The environment variable BERTH_SOCKET_READER
   * sets the default (tests force each path with it).
   */
  via?: ReaderChoice;
  /** The `ss` to run (tests); default 'ss' from PATH. */
  ssPath?: string;
}

export interface SocketRead {
  rows: SocketRow[];
  /** Lines that did not parse (a table read while sockets come and go can end mid-row). */
  skipped: number;
  /** Which reader answered. */
  via: 'ss' | 'proc';
  /** Whether the kernel has IPv6 TCP (tcp6 exists). */
  ipv6: boolean;
}

/** Why `ss` is not used in this process any more, once it failed; undefined while it works. */
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

/**
 * Rows a full /proc read would format, from /proc/net/sockstat{,6}: TCP sockets in use of both
 * families and TIME_WAIT, and UDP sockets with `udp` (all counted per network namespace);
 * undefined when unreadable.
 */
export function tableSize(procRoot = '/proc', udp = false): number | undefined {
  let v4: string;
  try {
    v4 = readFileSync(join(procRoot, 'net', 'sockstat'), 'latin1');
  } catch {
    return undefined;
  }
  let v6 = '';
  try {
    v6 = readFileSync(join(procRoot, 'net', 'sockstat6'), 'latin1');
  } catch {
    // no IPv6
  }
  const tcp = counter(v4, 'TCP', 'inuse') + counter(v4, 'TCP', 'tw') + counter(v6, 'TCP6', 'inuse');
  return udp ? tcp + counter(v4, 'UDP', 'inuse') + counter(v6, 'UDP6', 'inuse') : tcp;
}

/** Whether this read goes to `ss`. */
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

/**
 * node:child_process, loaded on the first `ss` read: it pulls in net and streams, which
 * `berth port` on a quiet host never needs (start-up time). createRequire, not import(): the
 * sync read cannot await, and the single executable cannot import() at all.
 */
function cp(): typeof ChildProcess {
  if (childProcess === undefined) {
    const req = typeof require === 'function' ? require : createRequire(process.cwd() + '/');
    childProcess = req('node:child_process') as typeof ChildProcess;
  }
  return childProcess;
}

/**
 * How long one `ss` may take before it is given up for /proc. It answers in 20-40 ms at
 * 50,000 sockets on the benchmark host and in a few hundred ms on a badly loaded one; /proc
 * costs ~150 ms at that size, so waiting longer than this never pays.
 */
export const SS_DEADLINE_MS = 2_000;

// detached: `ss` (or what runs as it) leads a process group of its own, which is killed
// whole at the deadline: a wrapper's children would otherwise hold its pipes and live on.
const SS_OPTIONS = { encoding: 'latin1', maxBuffer: 1 << 30, detached: true } as const;

/** SIGKILL a process group that ran past its deadline (it may be gone already). */
function killGroup(pid: number | undefined): void {
  if (pid === undefined || pid <= 0) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // gone
  }
}

/** What `ss` left, from spawnSync or execFile. */
interface SsExit {
  error?: Error | undefined;
  /** It ran past SS_DEADLINE_MS and was killed. */
  timedOut?: boolean;
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** What one read asks for, normalized. */
interface Query {
  ports: PortRange[] | undefined;
  listenOnly: boolean;
  udp: boolean;
}

/** A LISTEN-only read's rows: TCP listeners, and with UDP its unconnected (receiving) sockets. */
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
  const parsed = parseSsOutput(r.stdout, q.listenOnly && !q.udp ? { onlyState: 'LISTEN' } : {});
  // Each line is one socket, written whole by ss (not a table read mid-change): a line that
  // does not parse is not iproute2's ss, or not one berth understands.
  if (parsed.skipped > 0) {
    const bad = r.stdout.split('\n').find((l) => l.trim() !== '' && parseSsOutput(l, q.listenOnly && !q.udp ? { onlyState: 'LISTEN' } : {}).skipped > 0) ?? '';
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

/** The shell that starts `ss` for the asynchronous reads (ss-shell.ts); undefined once it failed. */
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

/** A filter normalized, or an empty answer when it matches no port at all. */
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
 * readSockets for callers that supervise other work meanwhile (the launch's pollers): `ss`
 * runs as a child the event loop does not wait on (spawnSync of ss, 100+ ms on a loaded host,
 * was 15% of berth's main thread with 16 replicas starting), started by a shell that berth
 * keeps (ss-shell.ts: not a fork of berth per read). Same choice and fallback rules;
 * the /proc read stays synchronous, as it is used only where it is cheap (a small table) or
 * where `ss` failed.
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
