/**
 * Benchmark 2: wall time of `berth port` (a whole CLI process: node startup, bundle load,
 * host map read, lease write) against `node -e 0`, the floor for any Node CLI.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchContext } from './lib/context.js';
import { table, type Section } from './lib/markdown.js';
import { fmt, median, percentile, verdict } from './lib/stats.js';
import { timeSpawn } from './lib/time-spawn.js';

const RANGE = '24000-24999';


export async function benchPortCli(ctx: BenchContext): Promise<Section> {
  const title = '2. `berth port` wall time';
  const cli = join(ctx.repoRoot, 'dist', 'berth.cjs');
  if (!existsSync(cli)) throw new Error('dist/berth.cjs is missing (run node scripts/build.mjs)');
  const env = { ...process.env, BERTH_STATE_DIR: ctx.privateDir('port-cli-state') };
  const node = [process.execPath, '-e', '0'];
  const berth = [process.execPath, cli, 'port', '--range', RANGE, '--ttl', '1m'];
  const n = ctx.quick ? 8 : 21;
  const warm = 3;
  ctx.log(`berth port: ${warm} warm-up + ${n} timed runs each of node -e 0 and berth port`);
  const times = { node: [] as number[], berth: [] as number[] };
  const ports = new Set<string>();
  for (let i = 0; i < warm + n; i++) {
    // Interleaved, so both see the same page cache and background load.
    const a = await timeSpawn(node, env);
    const b = await timeSpawn(berth, env);
    if (b.code !== 0) throw new Error(`berth port exited ${b.code}: ${b.stderr.trim().slice(0, 400)}`);
    const port = b.stdout.trim();
    if (!/^\d+$/.test(port)) throw new Error(`berth port printed ${JSON.stringify(b.stdout)} instead of one port`);
    ports.add(port);
    if (i >= warm) {
      times.node.push(a.ms);
      times.berth.push(b.ms);
    }
  }
  const mNode = median(times.node);
  const mBerth = median(times.berth);
  const r = mBerth / mNode;
  const rows = [
    ['`node -e 0`', fmt(mNode, 1), fmt(percentile(times.node, 90), 1), '1.00×', ''],
    [`\`node dist/berth.cjs port --range ${RANGE} --ttl 1m\``, fmt(mBerth, 1), fmt(percentile(times.berth, 90), 1), `${fmt(r, 2)}×`, `< 1.3×: ${verdict(r < 1.3)}`],
  ];
  const body = [
    table(['command', 'median ms', 'p90 ms', 'vs node -e 0', 'target'], rows),
    '',
    `Wall time from spawn() to exit, measured by the harness; median of ${n} runs each after ${warm} warm-up runs, the two commands interleaved. ` +
      `Run in the host's network namespace with a fresh private BERTH_STATE_DIR; every call leased a new port (ttl leases stay), ${ports.size} distinct ports in all. ` +
      'Both are started with the same node binary and no extra flags.',
  ].join('\n');
  return {
    title,
    body,
    summary: [{ what: '`berth port` wall time / `node -e 0`', measured: `${fmt(r, 2)}× (${fmt(mBerth, 1)} vs ${fmt(mNode, 1)} ms)`, target: '< 1.3×', verdict: verdict(r < 1.3) }],
  };
}
