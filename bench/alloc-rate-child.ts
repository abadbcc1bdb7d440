/**
 * Child of bench/alloc-rate.ts, run inside a fresh network namespace: times berth's
 * reserve()+release() loop against a raw listen()/close() loop on the same range.
 * argv[2]: JSON config. Prints one JSON line with the per-repetition rates.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
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

type Loop = (i: number) => Promise<void>;

const loops: Record<string, Loop> = {
  raw: (i) => listenClose(cfg.lo + (i % size)),
  berth: async () => {
    const r = await berth.reserve({ source: { kind: 'range', range }, count: 1, ttlMs: 60_000, stateDir: cfg.stateDir });
    await r.release();
  },
  // Not an allocator: the cost every table-reading allocator pays once per call.
  tableRead: async () => {
    readFileSync('/proc/net/tcp', 'latin1');
    readFileSync('/proc/net/tcp6', 'latin1');
  },
  berthNoHold: async () => {
    const r = await berth.reserve({ source: { kind: 'range', range }, count: 1, ttlMs: 60_000, stateDir: cfg.stateDir, hold: false });
    await r.release();
  },
};

/** Operations per second of `loop` run back to back for `ms`. */
async function rate(loop: Loop, ms: number): Promise<number> {
  const t0 = nowMs();
  let n = 0;
  let t = t0;
  while (t - t0 < ms) {
    await loop(n++);
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
