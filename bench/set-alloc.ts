/**
 * Benchmark: allocation time of a port set (one port and a 100-port block) in a band where
 * half the ports are busy, against one port, and against 100 separate ports (the same
 * number of leases without the contiguity). Sockets are held by the child in a fresh
 * network namespace, whose abstract socket names are the leases (docs/leases.md).
 */
import { build } from 'esbuild';
import { join } from 'node:path';
import type { BenchContext } from './lib/context.js';
import { table, type Section } from './lib/markdown.js';
import { runChildInNetns } from './lib/netns.js';
import { fmt, median } from './lib/stats.js';

const LO = 20000;
const HI = 21999;
const BLOCK = 100;

/**
 * Half of 20000-21999 busy: every even port of 20000-21599 (800 listeners, so the odd
 * ports between them are free singles but no run of 100) and all of 21700-21899 (200).
 * The block fits only inside 21599-21699 and 21900-21999: the planner must pass 800
 * fragmented candidates to find the first.
 */
function busyPorts(): number[] {
  const busy: number[] = [];
  for (let p = LO; p < 21600; p += 2) busy.push(p);
  for (let p = 21700; p <= 21899; p++) busy.push(p);
  return busy;
}

interface ChildOut {
  ms: Record<string, number[]>;
  releaseMs: Record<string, number[]>;
  where: Record<string, number[][]>;
  busyInTable: number;
}

export async function benchSetAlloc(ctx: BenchContext): Promise<Section> {
  const title = '13. A port set with a 100-port block';
  const script = join(ctx.tmp, 'set-alloc-child.mjs');
  await build({
    entryPoints: [join(ctx.repoRoot, 'bench', 'set-alloc-child.ts')],
    outfile: script,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    banner: { js: "import { createRequire as __benchRequire } from 'node:module'; const require = __benchRequire(import.meta.url);" },
    logLevel: 'warning',
  });
  const busy = busyPorts();
  const reps = ctx.quick ? 5 : 15;
  const stateDir = ctx.privateDir('set-alloc-state');
  ctx.log(`set allocation: ${reps} repetitions, ${busy.length} of ${HI - LO + 1} ports busy`);
  const res = await runChildInNetns<ChildOut>(script, { lo: LO, hi: HI, block: BLOCK, busy, reps, stateDir }, { maxFiles: true, sysctls: { ephemeral: '40000 60999' } });
  const m = (k: string) => median(res.ms[k] ?? []);
  const r = (k: string) => median(res.releaseMs[k] ?? []);
  const at = (k: string) => (res.where[k] ?? []).map(([a, b]) => (a === b ? String(a) : `${a}-${b}`)).join(' + ');
  const perPort = (m('set') - m('single')) / BLOCK;
  const rows = [
    ['one port', fmt(m('single'), 2), fmt(r('single'), 2), at('single')],
    [`a set: one port + a block of ${BLOCK}`, fmt(m('set'), 2), fmt(r('set'), 2), at('set')],
    [`${BLOCK} separate ports (--count ${BLOCK})`, fmt(m('separate'), 2), fmt(r('separate'), 2), `${BLOCK} ports from ${at('separate')}`],
    ['parts paid once per attempt: socket table read', fmt(m('hostMap'), 2), '', ''],
    ['… lease table read (/proc/net/unix)', fmt(m('leaseScan'), 2), '', ''],
    [`… planning (candidates and every start of a run of ${BLOCK})`, fmt(m('plan'), 2), '', ''],
  ];
  const body = [
    table(['allocation', 'reserveSet() ms (median)', 'release() ms (median)', 'ports'], rows),
    '',
    `Band ${LO}-${HI} in a fresh network namespace with ${busy.length} of its ${HI - LO + 1} ports busy (${res.busyInTable} listeners in the table): every even port of ${LO}-21599, so the odd ports between are free but no two are adjacent, and all of 21700-21899. ` +
      `A ${BLOCK}-port block fits only inside 21599-21699 and 21900-21999. Median of ${reps} repetitions after one warm-up, the loops interleaved; the leases are the namespace's abstract socket names (docs/leases.md), held by the child. Measured by bench/set-alloc.ts.`,
    '',
    `Planning is not where the time goes: one read of the socket table, one read of the lease table and one pass over the candidates serve the whole set. ` +
      `Each port of the block gets its own lease name (one bind) and a hold that proves it bindable: ${fmt(perPort, 3)} ms per port here.`,
    '',
    `Per repetition, ms: one port ${res.ms.single?.map((x) => fmt(x, 1)).join(', ')}; set ${res.ms.set?.map((x) => fmt(x, 1)).join(', ')}; separate ${res.ms.separate?.map((x) => fmt(x, 1)).join(', ')}.`,
  ].join('\n');
  return {
    title,
    body,
    summary: [{ what: `set of 1 port + ${BLOCK}-port block, half the band busy, vs one port`, measured: `${fmt(m('set'), 1)} vs ${fmt(m('single'), 1)} ms`, target: '—', verdict: 'reported' }],
  };
}
