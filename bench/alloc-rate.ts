/**
 * Benchmark 1: allocations per second. berth's in-process reserve()+release() against
 * the physical floor, a raw listen()/close() loop on the same range, in a fresh network
 * namespace with a private lease directory.
 */
import type { BenchContext } from './lib/context.js';
import { table, type Section } from './lib/markdown.js';
import { runChildInNetns } from './lib/netns.js';
import { fmt, median, ratio, verdict } from './lib/stats.js';

const LO = 20000;
const HI = 20999;

export async function benchAllocRate(ctx: BenchContext): Promise<Section> {
  const title = '1. Allocation rate (in-process)';
  const { path: lib, from } = await ctx.berthLib(['reserve', 'readHostMap']);
  const scripts = await ctx.childScripts();
  const reps = ctx.quick ? 3 : 7;
  const durationMs = ctx.quick ? 300 : 1000;
  const stateDir = ctx.privateDir('alloc-state');
  ctx.log(`allocation rate: ${reps} repetitions x ${durationMs} ms per loop`);
  const res = await runChildInNetns<{ rates: Record<string, number[]>; socketsInTable: number }>(scripts['alloc-rate-child'], {
    lib, lo: LO, hi: HI, reps, durationMs, warmupMs: 300, stateDir,
  }, { env: { ...process.env, BERTH_STATE_DIR: stateDir } });
  const raw = median(res.rates.raw ?? []);
  const berth = median(res.rates.berth ?? []);
  const noHold = median(res.rates.berthNoHold ?? []);
  const tableRead = median(res.rates.tableRead ?? []);
  const rows = [
    ['raw `net.Server` listen()+close() (physical floor)', fmt(raw, 0), '1.00×', ''],
    ['berth `reserve({count:1, ttlMs})` + `release()` (lease + hold)', fmt(berth, 0), ratio(berth, raw), `≥ 0.5×: ${verdict(berth / raw >= 0.5)}`],
    ['berth `reserve({hold:false})` + `release()` (lease only, as `berth port`)', fmt(noHold, 0), ratio(noHold, raw), ''],
    ['reference: `readFileSync` of /proc/net/tcp + tcp6 alone (reads/s)', fmt(tableRead, 0), ratio(tableRead, raw), ''],
  ];
  const body = [
    table(['loop', 'allocations/s (median)', 'vs raw', 'target'], rows),
    '',
    `Range ${LO}-${HI}, run in a fresh network namespace (the socket table held ${res.socketsInTable} rows when read at the end), lease directory a fresh private temporary directory. ` +
      `Each loop runs back to back for ${durationMs} ms per repetition; repetitions are interleaved (raw, berth, table read, berth without hold) to spread drift; median of ${reps} repetitions after a 300 ms warm-up each. ` +
      'The raw loop walks the range listening on the default wildcard address ([::] dual-stack). ' +
      "berth's loop does all of its work each time: reads the sysctls and /proc/net/tcp{,6}, creates the lease file (temporary file + link()), binds and listens its hold, then closes it and removes the lease. " +
      `Library: ${from}.`,
    '',
    `The last row is not an allocator: it is how often this kernel lets any process read both socket tables, even nearly empty ones (${fmt(1000 / tableRead, 2)} ms per read of both). ` +
      'The kernel generates each file by walking its whole TCP hash tables, which are sized from memory at boot and shared by all network namespaces, so even an empty table costs this much. ' +
      `An allocator that reads the tables once per allocation, as berth does to see TIME_WAIT sockets that a listen() probe misses, cannot run faster than that row; berth reaches ${fmt((berth / tableRead) * 100, 0)}% of it.`,
    '',
    `Per-repetition allocations/s: raw ${res.rates.raw?.map((x) => fmt(x, 0)).join(', ')}; berth ${res.rates.berth?.map((x) => fmt(x, 0)).join(', ')}; berth without hold ${res.rates.berthNoHold?.map((x) => fmt(x, 0)).join(', ')}; table reads ${res.rates.tableRead?.map((x) => fmt(x, 0)).join(', ')}.`,
  ].join('\n');
  return {
    title,
    body,
    summary: [{ what: 'allocation rate, berth / raw bind loop', measured: `${ratio(berth, raw)} (${fmt(berth, 0)} vs ${fmt(raw, 0)} /s)`, target: '≥ 0.5×', verdict: verdict(berth / raw >= 0.5) }],
  };
}
