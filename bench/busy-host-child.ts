/**
 * Child of bench/busy-host.ts, run in a fresh network namespace (the harness's). It makes one
 * more namespace per table size (an anchor process, `unshare --net`), fills each with loopback
 * connections held by bench/socket-holder-child.ts (both ends in the table), and measures
 * inside each (nsenter):
 *   - a filtered read of 100 ports (readSockets, the allocator's read) and the LISTEN-only
 *     read (the ownership poller's and the listener audit's), through /proc, through `ss`, and
 *     as berth picks per read ('auto'). Each size is read while the host holds no other big
 *     namespace: the kernel's connection hash is one for the whole host, and every read of it
 *     (/proc or sock_diag, filtered or not) walks every connection of every namespace. So the
 *     smallest is also read again while the biggest exists, to show that walk;
 *   - `berth port` in the quietest namespace before the busiest exists and in the busiest
 *     (a series each: an idle host against a busy one), and the two paired while both exist
 *     (bench/lib/paired.ts: the walk then costs both alike, what is left is berth's own);
 *   - who holds a listener, with 2,000 extra processes on the host: the service's own tree
 *     (what launch reads), every process's fds (berth's stranger search), and `ss -p`.
 * argv[2]: JSON Config, or 'reader' + JSON {reps} for the in-namespace read timings.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { findSocketOwners, socketsHeldBy } from '../src/host/owners.js';
import { readSockets, SS_MIN_ROWS, tableSize, type ReaderChoice } from '../src/host/socket-reader.js';
import { paired, series, type Paired } from './lib/paired.js';
import { median } from './lib/stats.js';

export interface Config {
  holder: string;
  self: string;
  berth: string;
  stateDir: string;
  sizes: number[];
  reps: number;
  pairs: number;
  processes: number;
}

export interface ReadTimes {
  /** Median ms per read, by reader: 100 ports, and LISTEN only. */
  ports: Record<ReaderChoice, number>;
  listen: Record<ReaderChoice, number>;
  /** What 'auto' chose. */
  autoVia: { ports: string; listen: string };
  size: number;
}

export interface Result {
  sizes: { wanted: number; rows: number; reads: ReadTimes }[];
  /** The smallest namespace read again while the biggest exists. */
  quietBesideBusy: ReadTimes;
  port: Paired;
  /** `berth port` in the smallest namespace alone, and in the biggest: median wall and CPU ms. */
  portIdle: { wallMs: number; cpuMs: number };
  portBusy: { wallMs: number; cpuMs: number };
  owners: { processes: number; treeMs: number; hostMs: number; ssMs: number };
  ssMinRows: number;
}

const PORTS = [{ lo: 20000, hi: 20099 }];
const VIAS: ReaderChoice[] = ['proc', 'ss', 'auto'];
const log = (m: string) => process.stderr.write(`[busy-host] ${m}\n`);

function timeReads(reps: number): ReadTimes {
  const t: Record<string, number[]> = {};
  const via: Record<string, string> = {};
  for (let i = 0; i < reps + 2; i++) {
    for (const v of VIAS) {
      for (const kind of ['ports', 'listen'] as const) {
        const t0 = performance.now();
        const r = kind === 'ports' ? readSockets({ localPorts: PORTS, via: v }) : readSockets({ listenOnly: true, via: v });
        const ms = performance.now() - t0;
        if (v === 'auto') via[kind] = r.via;
        if (i >= 2) (t[`${kind} ${v}`] ??= []).push(ms);
      }
    }
  }
  const pick = (kind: string) => Object.fromEntries(VIAS.map((v) => [v, median(t[`${kind} ${v}`]!)])) as Record<ReaderChoice, number>;
  return { ports: pick('ports'), listen: pick('listen'), autoVia: { ports: via.ports!, listen: via.listen! }, size: tableSize() ?? -1 };
}

if (process.argv[2] === 'reader') {
  const { reps } = JSON.parse(process.argv[3]!) as { reps: number };
  process.stdout.write(JSON.stringify(timeReads(reps)) + '\n');
  process.exit(0);
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as Config;
const held: ChildProcess[] = [];

function startIn(anchor: number, arg: unknown): Promise<Record<string, number>> {
  const child = spawn('nsenter', ['-t', String(anchor), '-n', process.execPath, cfg.holder, JSON.stringify(arg)], { stdio: ['pipe', 'pipe', 'inherit'] });
  held.push(child);
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) => resolve(JSON.parse(line) as Record<string, number>));
    child.once('exit', (code) => reject(new Error(`socket holder exited ${code} before reporting`)));
  });
}

/** A new namespace holding about `sockets` TCP sockets: its anchor's pid, and a way to empty it. */
async function namespace(sockets: number): Promise<{ anchor: number; empty: () => Promise<void> }> {
  const mark = held.length;
  const anchor = spawn('unshare', ['--net', '--', 'sh', '-c', 'ip link set lo up && exec sleep 36000'], { stdio: 'ignore' });
  held.push(anchor);
  // The anchor is in its namespace once sh has exec'd sleep.
  for (let i = 0; i < 200; i++) {
    const comm = spawnSync('cat', [`/proc/${anchor.pid}/comm`], { encoding: 'utf8' }).stdout.trim();
    if (comm === 'sleep') break;
    await new Promise((r) => setTimeout(r, 10));
  }
  for (let left = Math.ceil(sockets / 2); left > 0; left -= 8_000) {
    const srv = await startIn(anchor.pid!, { role: 'server' });
    await startIn(anchor.pid!, { role: 'clients', count: Math.min(8_000, left), ...srv });
  }
  const mine = held.slice(mark);
  const empty = async () => {
    const gone = mine.map((c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(null) : c.once('exit', r))));
    for (const c of mine) c.kill('SIGKILL');
    await Promise.all(gone);
    // Closed loopback connections linger a moment in the kernel's tables.
    await new Promise((r) => setTimeout(r, 1_000));
  };
  return { anchor: anchor.pid!, empty };
}

function readIn(anchor: number): ReadTimes {
  const r = spawnSync('nsenter', ['-t', String(anchor), '-n', process.execPath, cfg.self, 'reader', JSON.stringify({ reps: cfg.reps })], { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`reader failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as ReadTimes;
}

function timeMs(f: () => unknown, reps: number): number {
  const t: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    f();
    t.push(performance.now() - t0);
  }
  return median(t);
}

const logReads = (label: string, reads: ReadTimes) =>
  log(`${label} (${reads.size} counted): 100 ports proc ${reads.ports.proc.toFixed(2)} / ss ${reads.ports.ss.toFixed(2)} / auto ${reads.ports.auto.toFixed(2)} ms (${reads.autoVia.ports}); listen ss ${reads.listen.ss.toFixed(2)} ms`);
const port = (anchor: number) => ['/usr/bin/nsenter', '-t', String(anchor), '-n', process.execPath, cfg.berth, 'port', '--range', '20000-20999', '--ttl', '1m'];
const portEnv = { ...process.env, BERTH_STATE_DIR: cfg.stateDir };

try {
  // Smallest first and kept (the quiet side); middle sizes emptied once read; biggest kept.
  const sizes: Result['sizes'] = [];
  let quiet = 0;
  let busy = 0;
  let portIdle: Result['portIdle'] | undefined;
  for (const [k, wanted] of cfg.sizes.entries()) {
    const t0 = performance.now();
    const ns = await namespace(wanted);
    log(`namespace of ${wanted} sockets ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    await new Promise((r) => setTimeout(r, 500));
    const reads = readIn(ns.anchor);
    logReads(`${wanted} sockets`, reads);
    sizes.push({ wanted, rows: reads.size, reads });
    if (k === 0) {
      quiet = ns.anchor;
      portIdle = series(port(quiet), cfg.pairs, portEnv);
      log(`berth port, ${wanted} sockets, no other namespace: ${portIdle.wallMs.toFixed(1)} ms wall, ${portIdle.cpuMs.toFixed(1)} ms CPU`);
    } else if (k === cfg.sizes.length - 1) busy = ns.anchor;
    else await ns.empty();
  }
  const portBusy = series(port(busy), cfg.pairs, portEnv);
  log(`berth port, ${cfg.sizes.at(-1)} sockets: ${portBusy.wallMs.toFixed(1)} ms wall, ${portBusy.cpuMs.toFixed(1)} ms CPU`);
  const quietBesideBusy = readIn(quiet);
  logReads(`${cfg.sizes[0]} sockets beside ${cfg.sizes.at(-1)}`, quietBesideBusy);
  log(`berth port: ${cfg.pairs} pairs, ${cfg.sizes[0]} vs ${cfg.sizes.at(-1)} sockets`);
  const portPairs = paired(port(quiet), port(busy), cfg.pairs, portEnv);

  // Owners: a listener of ours among `processes` other processes.
  const sleepers: ChildProcess[] = [];
  for (let i = 0; i < cfg.processes; i++) sleepers.push(spawn('sleep', ['3600'], { stdio: 'ignore' }));
  held.push(...sleepers);
  const srv = createServer().listen(20050, '127.0.0.1');
  await new Promise((r) => srv.once('listening', r));
  await new Promise((r) => setTimeout(r, 500));
  const row = readSockets({ localPorts: [{ lo: 20050, hi: 20050 }], via: 'proc' }).rows.find((r) => r.state === 'LISTEN')!;
  const inodes = new Set([row.inode]);
  const reps = Math.max(5, Math.min(cfg.reps, 9));
  const owners = {
    processes: cfg.processes,
    treeMs: timeMs(() => socketsHeldBy('/proc', process.pid, inodes), reps),
    hostMs: timeMs(() => findSocketOwners('/proc', inodes), reps),
    ssMs: timeMs(() => spawnSync('ss', ['-tlnHOp', 'sport = :20050'], { encoding: 'utf8' }), reps),
  };
  srv.close();
  log(`owners among ${cfg.processes} processes: tree ${owners.treeMs.toFixed(2)} ms, host walk ${owners.hostMs.toFixed(1)} ms, ss -p ${owners.ssMs.toFixed(1)} ms`);
  const result: Result = { sizes, quietBesideBusy, port: portPairs, portIdle: portIdle!, portBusy, owners, ssMinRows: SS_MIN_ROWS };
  process.stdout.write(JSON.stringify(result) + '\n');
} finally {
  for (const c of held) {
    try {
      c.kill('SIGKILL');
    } catch {
      // gone
    }
  }
}
process.exit(0);
