/**
 * Child of bench/busy-host.ts, run in a fresh network namespace (the harness's). It makes one
 * more namespace per table size (an anchor process, `unshare --net`), fills each with loopback
 * connections held by bench/socket-holder-child.ts (both ends in the table), and measures
 * inside each (nsenter):
 *   - a filtered read of 100 ports (readSockets, the allocator's and the ownership poller's
 *     read) and the listener audit's LISTEN-only read, through /proc, through `ss`, and as
 *     berth picks per read ('auto');
 *   - `berth port` in the quietest namespace against the busiest, paired (bench/lib/paired.ts);
 *   - who holds a listener, with 2,000 extra processes on the host: the service's own tree
 *     (what launch reads), every process's fds (berth's stranger search), and `ss -p`.
 * argv[2]: JSON Config, or 'reader' + JSON {reps} for the in-namespace read timings.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { findSocketOwners, socketsHeldBy } from '../src/host/owners.js';
import { readSockets, SS_MIN_ROWS, tableSize, type ReaderChoice } from '../src/host/socket-reader.js';
import { paired, type Paired } from './lib/paired.js';
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
  port: Paired;
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

/** A new namespace holding about `sockets` TCP sockets; its anchor's pid. */
async function namespace(sockets: number): Promise<number> {
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
  return anchor.pid!;
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

try {
  const anchors: number[] = [];
  for (const n of cfg.sizes) {
    const t0 = performance.now();
    anchors.push(await namespace(n));
    log(`namespace of ${n} sockets ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  await new Promise((r) => setTimeout(r, 500));
  const sizes = cfg.sizes.map((wanted, k) => {
    const reads = readIn(anchors[k]!);
    log(`${wanted} sockets (${reads.size} counted): 100 ports proc ${reads.ports.proc.toFixed(2)} / ss ${reads.ports.ss.toFixed(2)} / auto ${reads.ports.auto.toFixed(2)} ms (${reads.autoVia.ports})`);
    return { wanted, rows: reads.size, reads };
  });
  const quiet = anchors[0]!;
  const busy = anchors[anchors.length - 1]!;
  const port = (anchor: number) => ['/usr/bin/nsenter', '-t', String(anchor), '-n', process.execPath, cfg.berth, 'port', '--range', '20000-20999', '--ttl', '1m'];
  log(`berth port: ${cfg.pairs} pairs, ${cfg.sizes[0]} vs ${cfg.sizes.at(-1)} sockets`);
  const portPairs = paired(port(quiet), port(busy), cfg.pairs, { ...process.env, BERTH_STATE_DIR: cfg.stateDir });

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
  const result: Result = { sizes, port: portPairs, owners, ssMinRows: SS_MIN_ROWS };
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
