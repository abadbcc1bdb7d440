/**
 * Benchmark: 8 stacks of 2 vLLM-like engines started at once on one host (a fresh network
 * namespace per run), three ways of giving each engine its VLLM_PORT:
 *   berth       named ports `http: 1, dist: { block: 16 }`, VLLM_PORT={ports.dist}
 *   stride-100  what users ship today: VLLM_PORT = 20000 + 100 * engine, same base in every stack
 *   port+1      today's single berth port, VLLM_PORT = port + 1
 * Counted: engines that answered /health, engines that died with EADDRINUSE, ports (internal or API) two engines chose, stacks that
 * failed, and the time from the 8 `berth up` starts until every stack's engines were ready.
 * The engines are test/fixtures/services/vllm-like.py (vLLM's scan, probe then bind later);
 * the driver is test/fixtures/services/vllm-stacks.ts.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runInNetns, tsNode } from '../test/helpers/netns.js';
import type { Scheme, StacksResult } from '../test/fixtures/services/vllm-stacks.js';
import type { BenchContext } from './lib/context.js';
import { table, type Section } from './lib/markdown.js';
import { fmt, median } from './lib/stats.js';

const STACKS = 8;
const ENGINES = 2;
const INTERNAL = 4;
const BLOCK = 16;
const SCHEMES: { scheme: Scheme; label: string }[] = [
  { scheme: 'blocks', label: 'berth `ports: { http: 1, dist: { block: 16 } }`, `VLLM_PORT={ports.dist}`' },
  { scheme: 'stride-100', label: 'stride of 100: `VLLM_PORT = 20000 + 100 * engine` (same base in every stack)' },
  { scheme: 'port-plus-1', label: 'one berth port, `VLLM_PORT = port + 1`' },
];

interface Row {
  runs: number;
  failed: number[];
  ready: number[];
  overlaps: number[];
  stacksFailed: number[];
  allReadyMs: number[];
  error?: string;
}

async function once(ctx: BenchContext, scheme: Scheme, berthPath: string): Promise<StacksResult> {
  const dir = ctx.privateDir(`vllm-${scheme}`);
  const argv = tsNode(join(ctx.repoRoot, 'test/fixtures/services/vllm-stacks.ts'), '--scheme', scheme, '--dir', dir, '--berth', berthPath, '--stacks', String(STACKS), '--engines', String(ENGINES), '--internal', String(INTERNAL), '--block', String(BLOCK));
  const r = await runInNetns({}, argv, { timeoutMs: 300_000 });
  if (r.code !== 0) throw new Error(`vllm-stacks driver (${scheme}) exited ${r.code}: ${r.stderr.trim().split('\n').slice(-3).join(' ')}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as StacksResult;
}

export async function benchVllmStacks(ctx: BenchContext): Promise<Section> {
  const berthPath = join(ctx.repoRoot, 'dist', 'berth.cjs');
  if (!existsSync(berthPath)) throw new Error(`${berthPath} is missing: run npm run build first`);
  const runs = ctx.quick ? 1 : 3;
  const rows = new Map<Scheme, Row>();
  for (const { scheme } of SCHEMES) rows.set(scheme, { runs: 0, failed: [], ready: [], overlaps: [], stacksFailed: [], allReadyMs: [] });
  // Interleaved, so a burst of load on the machine hits every scheme alike.
  for (let i = 0; i < runs; i++) {
    for (const { scheme } of SCHEMES) {
      const row = rows.get(scheme)!;
      if (row.error !== undefined) continue;
      ctx.log(`vllm stacks: ${scheme}, run ${i + 1}/${runs}`);
      try {
        const r = await once(ctx, scheme, berthPath);
        row.runs++;
        row.failed.push(r.failed);
        row.ready.push(r.engines.filter((e) => e.ready).length);
        row.overlaps.push(r.overlaps.length);
        row.stacksFailed.push(r.stacks.filter((s) => s.code !== 0).length);
        if (r.allReadyMs !== undefined) row.allReadyMs.push(r.allReadyMs);
      } catch (e) {
        row.error = (e as Error).message.split('\n')[0]!.slice(0, 200);
      }
    }
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const cells = (r: Row) =>
    r.error !== undefined && r.runs === 0
      ? ['failed to run', '', '', '', '', r.error]
      : [
          `${sum(r.ready)} of ${r.runs * STACKS * ENGINES}`,
          `${sum(r.failed)} of ${r.runs * STACKS * ENGINES}`,
          String(sum(r.overlaps)),
          `${sum(r.stacksFailed)} of ${r.runs * STACKS}`,
          `${r.allReadyMs.length} of ${r.runs}`,
          r.allReadyMs.length > 0 ? `${fmt(median(r.allReadyMs), 0)} ms` : '—',
        ];
  const body = [
    table(
      ['VLLM_PORT scheme', 'engines ready', 'engines failed (EADDRINUSE)', 'ports two engines chose', 'stacks failed', 'runs with every stack ready', 'time to all ready (median)'],
      SCHEMES.map(({ scheme, label }) => [label, ...cells(rows.get(scheme)!)]),
    ),
    '',
    `${runs} run${runs === 1 ? '' : 's'} per scheme, interleaved, each in a fresh network namespace (Linux default ephemeral range): ${STACKS} \`berth up\` processes started at once, one stack file and run directory each, one shared lease domain; each stack runs ${ENGINES} engines of test/fixtures/services/vllm-like.py that take ${INTERNAL} internal ports by vLLM's scan upward from VLLM_PORT (bind without SO_REUSEADDR, close, bind for real 0.3 s later) plus the API port from \`--port\`. "Time to all ready" runs from the start of the ${STACKS} processes until the last stack's engines all answered /health (its job ran; every stack then waits for the others, so all run at once), over the runs where every stack got there. Measured by bench/vllm-stacks.ts.`,
  ].join('\n');
  const b = rows.get('blocks')!;
  const s = rows.get('stride-100')!;
  const p = rows.get('port-plus-1')!;
  const short = (r: Row) => (r.runs === 0 ? 'not run' : `${sum(r.failed)} failed`);
  return {
    title: '8. Eight vLLM-like stacks on one host',
    body,
    summary: [
      {
        what: `${STACKS}×${ENGINES} vLLM-like engines: berth blocks / stride 100 / port+1`,
        measured: `${short(b)} / ${short(s)} / ${short(p)}; berth all ready in ${b.allReadyMs.length > 0 ? `${fmt(median(b.allReadyMs), 0)} ms` : 'n/a'}`,
        target: 'berth: 0 failed',
        verdict: b.runs === 0 ? 'failed' : sum(b.failed) === 0 && sum(b.overlaps) === 0 && sum(b.stacksFailed) === 0 ? 'met' : 'missed',
      },
    ],
  };
}
