/**
 * Child of bench/lease-domain.ts: one process of a swarm of concurrent allocators. Loads a
 * berth library (path in the config), waits for the common start time, runs `per`
 * reserve() calls at once (one port each, from one range), prints the ports it got, keeps
 * the leases `holdMs` so every process's ports are leased at the same time, then exits.
 */
import { pathToFileURL } from 'node:url';

interface Config {
  lib: string;
  store: 'sockets' | 'files';
  stateDir: string;
  per: number;
  at: number;
  holdMs: number;
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as Config;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const lib: any = await import(pathToFileURL(cfg.lib).href);
await new Promise((r) => setTimeout(r, Math.max(0, cfg.at - Date.now())));
const opts = { source: { kind: 'range', range: { lo: 20000, hi: 29999 } }, count: 1, ...(cfg.store === 'files' ? { stateDir: cfg.stateDir, ttlMs: 120_000 } : {}) };
const got = await Promise.allSettled(Array.from({ length: cfg.per }, () => lib.reserve(opts)));
const ports = got.flatMap((g) => (g.status === 'fulfilled' ? (g.value as { ports: number[] }).ports : []));
process.stdout.write(`${JSON.stringify({ ports, failed: got.filter((g) => g.status === 'rejected').length })}\n`);
await new Promise((r) => setTimeout(r, cfg.holdMs));
process.exit(0);
