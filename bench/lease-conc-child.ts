/**
 * Child of bench/lease-domain.ts: one process of a swarm of concurrent allocators. Loads a
 * berth library (path in the config), waits for the common start time, runs `per`
 * reserve() calls at once (one port each, from one range), appends the ports it got to
 * `out`, and keeps the leases until the file `done` exists (every process has answered), so
 * all the ports are leased at the same time; then exits.
 */
import { appendFileSync, existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

interface Config {
  lib: string;
  store: 'sockets' | 'files';
  stateDir: string;
  per: number;
  at: number;
  out: string;
  done: string;
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as Config;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const lib: any = await import(pathToFileURL(cfg.lib).href);
await new Promise((r) => setTimeout(r, Math.max(0, cfg.at - Date.now())));
const opts = { source: { kind: 'range', range: { lo: 20000, hi: 29999 } }, count: 1, ...(cfg.store === 'files' ? { stateDir: cfg.stateDir, ttlMs: 120_000 } : {}) };
const got = await Promise.allSettled(Array.from({ length: cfg.per }, () => lib.reserve(opts)));
const ports = got.flatMap((g) => (g.status === 'fulfilled' ? (g.value as { ports: number[] }).ports : []));
appendFileSync(cfg.out, `${JSON.stringify({ ports, failed: got.filter((g) => g.status === 'rejected').length })}\n`);
while (!existsSync(cfg.done)) await new Promise((r) => setTimeout(r, 50));
process.exit(0);
