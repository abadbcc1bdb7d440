/**
 * Child of bench/lease-domain.ts, run inside a fresh network namespace with one berth
 * library: today's (leases are abstract socket names) or the file-store baseline
 * (bench/lib/baseline.ts), loaded from the path in the config. Times a whole stack's
 * allocation (256 sets of one port and a 16-port block, one reserveSet()) and the read of
 * the lease table with 10,000 leases in the namespace. Prints one JSON line.
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { median, nowMs } from './lib/stats.js';

interface Config {
  lib: string;
  store: 'sockets' | 'files';
  stateDir: string;
  reps: number;
  tableReps: number;
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as Config;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const lib: any = await import(pathToFileURL(cfg.lib).href);
const range = (lo: number, hi: number) => ({ kind: 'range' as const, range: { lo, hi } });
const start = Number(readFileSync('/proc/self/stat', 'latin1').split(') ')[1]!.split(' ')[19]);
// The baseline names its private lease directory; today's store has nothing to configure.
const opts = cfg.store === 'files' ? { owner: { pid: process.pid, start }, location: { root: cfg.stateDir, shared: false } } : { owner: { pid: process.pid, start } };

const stack = [...Array.from({ length: 256 }, (_, i) => ({ source: range(20000, 29999), count: 1, name: `stack.yaml:svc/${i}/port` })), { source: range(20000, 29999), count: 16, block: true, name: 'stack.yaml:engine/0/dist' }];
const stackMs: number[] = [];
const releaseMs: number[] = [];
for (let rep = 0; rep <= cfg.reps; rep++) {
  const t0 = nowMs();
  const rs = await lib.reserveSet(stack, opts);
  const t1 = nowMs();
  await Promise.all(rs.map((r: { release(): Promise<void> }) => r.release()));
  if (rep > 0) {
    stackMs.push(t1 - t0);
    releaseMs.push(nowMs() - t1);
  }
}

// 10,000 leases in the namespace: three blocks.
const t0 = nowMs();
const big = await lib.reserveSet(
  [
    { source: range(10000, 39999), count: 4000, block: true },
    { source: range(10000, 39999), count: 4000, block: true },
    { source: range(10000, 39999), count: 2000, block: true },
  ],
  opts,
);
const make10k = nowMs() - t0;
const list = () => (cfg.store === 'files' ? lib.currentLeases({ stateDir: cfg.stateDir }) : lib.currentLeases({ holders: false }));
const tableMs: number[] = [];
let listed = 0;
for (let rep = 0; rep <= cfg.tableReps; rep++) {
  const t = nowMs();
  listed = list().length;
  if (rep > 0) tableMs.push(nowMs() - t);
}
await Promise.all(big.map((r: { release(): Promise<void> }) => r.release()));
process.stdout.write(`${JSON.stringify({ stackMs, releaseMs, stackMedian: median(stackMs), make10k, tableMs, tableMedian: median(tableMs), listed })}\n`);
process.exit(0);
