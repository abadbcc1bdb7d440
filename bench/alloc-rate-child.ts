/**
 * Child of bench/alloc-rate.ts, run inside a fresh network namespace: times berth's
 * reserve()+release() loop against a raw listen()/close() loop on the same range.
 * argv[2]: JSON config. Prints one JSON line with the per-repetition rates.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { loadBerth } from './lib/berth-api.js';
import { nowMs } from './lib/stats.js';

interface Config {
  lib: string;
  lo: number;
  hi: number;
  reps: number;
  durationMs: number;
  warmupMs: number;
  stateDir: string;
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as Config;
const berth = await loadBerth(cfg.lib);
const range = { lo: cfg.lo, hi: cfg.hi };
const size = cfg.hi - cfg.lo + 1;

function listenClose(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    // Default host: [::] dual-stack where IPv6 is on, like berth's hold.
    srv.listen({ port }, () => srv.close(() => resolve()));
  });
}

/** One pass of a loop; returns how many allocations (ports) it made when more than one. */
type Loop = (i: number) => Promise<number | void>;

/** Ports per reserve() in the batched loop: one table read serves them all. */
const BATCH = 100;

const loops: Record<string, Loop> = {
  raw: (i) => listenClose(cfg.lo + (i % size)),
  berth: async () => {
    const r = await berth.reserve({ source: { kind: 'range', range }, count: 1 });
    await r.release();
  },
  berthNoHold: async () => {
    const r = await berth.reserve({ source: { kind: 'range', range }, count: 1, hold: false });
    await r.release();
  },
  berthBatch: async () => {
    const r = await berth.reserve({ source: { kind: 'range', range }, count: BATCH });
    await r.release();
    return BATCH;
  },
  // Not allocators: the two costs every berth allocation pays at least once.
  // Both socket tables read the way berth reads them (one hash-table walk per file; see
  // src/host/read-host.ts), with the sysctls: readHostMap() alone.
  hostMap: async () => {
    berth.readHostMap();
  },
  // A lease's port name bound and closed: a lease is an abstract Unix socket name per port
  // (docs/leases.md), bound and listening while it lasts, so each one costs at least this.
  leaseName: (i) =>
    new Promise<void>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen({ path: `\0berth-bench/${process.pid}/${i}`, backlog: 1, exclusive: true }, () => server.close(() => resolve()));
    }),
  // Not an allocator: the tables read the customary way, until read() returns 0.
  tableRead: async () => {
    readFileSync('/proc/net/tcp', 'latin1');
    readFileSync('/proc/net/tcp6', 'latin1');
  },
};

/** Operations per second of `loop` run back to back for `ms`. */
async function rate(loop: Loop, ms: number): Promise<number> {
  const t0 = nowMs();
  let n = 0;
  let t = t0;
  let i = 0;
  while (t - t0 < ms) {
    n += (await loop(i++)) ?? 1;
    t = nowMs();
  }
  return (n / (t - t0)) * 1000;
}

const rates: Record<string, number[]> = {};
for (const [name, loop] of Object.entries(loops)) {
  await rate(loop, cfg.warmupMs);
  rates[name] = [];
}
// Interleaved so drift (other load, CPU frequency) hits every loop alike.
for (let rep = 0; rep < cfg.reps; rep++) {
  for (const [name, loop] of Object.entries(loops)) rates[name]!.push(await rate(loop, cfg.durationMs));
  process.stderr.write(`[alloc-rate] repetition ${rep + 1}/${cfg.reps} done\n`);
}
const table = berth.readHostMap().sockets.length;
process.stdout.write(JSON.stringify({ rates, socketsInTable: table }) + '\n');
