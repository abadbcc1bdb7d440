/**
 * Benchmark 14: leases as the network namespace's abstract socket names (docs/leases.md)
 * against the file store they replaced, paired in one run (bench/lib/baseline.ts builds the
 * last commit with the file store): a whole stack's allocation, `berth port` wall time,
 * 256 concurrent `berth port` calls, and the lease table read with 10,000 leases.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { fileStoreBaseline, FILE_STORE_COMMIT } from './lib/baseline.js';
import type { BenchContext } from './lib/context.js';
import { table, type Section } from './lib/markdown.js';
import { netnsArgv, runChildInNetns } from './lib/netns.js';
import { fmt, median, verdict } from './lib/stats.js';
import { timeSpawn } from './lib/time-spawn.js';

interface ChildOut {
  stackMs: number[];
  releaseMs: number[];
  stackMedian: number;
  make10k: number;
  tableMs: number[];
  tableMedian: number;
  listed: number;
}


/**
 * 256 allocators at once in a fresh namespace: 64 processes of 4 concurrent reserve() calls
 * each (256 Node.js processes do not fit a small CI machine), all started at one time and
 * holding their leases until every one has answered. How many ports were handed out twice.
 */
async function concurrent(ctx: BenchContext, script: string, lib: string, store: 'sockets' | 'files'): Promise<{ ok: number; failed: number; dups: number }> {
  const stateDir = ctx.privateDir(`conc-${store}`);
  const out = join(stateDir, 'results');
  const done = join(stateDir, 'done');
  const at = Date.now() + 8000;
  // Every process holds its leases until all 64 have answered (then "done" is made).
  const sh = `for i in $(seq 64); do "$NODE" "$SCRIPT" "$CFG" & done
    until [ "$(cat "$OUT" 2>/dev/null | wc -l)" -ge 64 ]; do sleep 0.05; done; touch "$DONE"; wait; cat "$OUT"`;
  const r = await timeSpawn([...netnsArgv({ ephemeral: '40000 60999' }), 'sh', '-c', sh], {
    ...process.env,
    NODE: process.execPath,
    SCRIPT: script,
    OUT: out,
    DONE: done,
    CFG: JSON.stringify({ lib, store, stateDir, per: 4, at, out, done }),
  });
  const all: number[] = [];
  let failed = 0;
  for (const line of r.stdout.trim().split('\n')) {
    if (!line.startsWith('{')) continue;
    const o = JSON.parse(line) as { ports: number[]; failed: number };
    all.push(...o.ports);
    failed += o.failed;
  }
  return { ok: all.length, failed, dups: all.length - new Set(all).size };
}

export async function benchLeaseDomain(ctx: BenchContext): Promise<Section> {
  const title = '15. Leases: kernel names vs the file store';
  const base = fileStoreBaseline(ctx);
  const child = join(ctx.tmp, 'lease-domain-child.mjs');
  const concChild = join(ctx.tmp, 'lease-conc-child.mjs');
  for (const [src, out] of [['lease-domain-child.ts', child], ['lease-conc-child.ts', concChild]] as const) {
    await build({ entryPoints: [join(ctx.repoRoot, 'bench', src)], outfile: out, bundle: true, platform: 'node', format: 'esm', target: 'node20', logLevel: 'warning' });
  }
  const newLib = join(ctx.repoRoot, 'dist', 'index.js');
  const newCli = join(ctx.repoRoot, 'dist', 'berth.cjs');
  if (!existsSync(newLib) || !existsSync(newCli)) throw new Error('dist/ is missing (run node scripts/build.mjs)');
  const reps = ctx.quick ? 3 : 9;
  const tableReps = ctx.quick ? 3 : 9;
  const run = (lib: string, store: 'sockets' | 'files') =>
    runChildInNetns<ChildOut>(child, { lib, store, stateDir: ctx.privateDir(`lease-${store}`), reps, tableReps }, { maxFiles: true, sysctls: { ephemeral: '40000 60999' } });
  ctx.log(`leases: a stack's 256 sets + a 16-port block (${reps} reps) and the table at 10,000 leases, sockets${base ? ' and files' : ''}`);
  const sockets = await run(newLib, 'sockets');
  const files = base ? await run(join(base, 'dist', 'index.js'), 'files') : undefined;

  // berth port wall time, the two CLIs interleaved, in the host's namespace (as section 2), owned by a sleeper.
  const n = ctx.quick ? 5 : 11;
  const sleeper = spawn('sleep', ['600'], { stdio: 'ignore' });
  const owner = String(sleeper.pid);
  const env = { ...process.env, BERTH_STATE_DIR: ctx.privateDir('lease-cli') };
  const cli = { sockets: [] as number[], files: [] as number[] };
  try {
    for (let i = 0; i < n + 2; i++) {
      const a = await timeSpawn([process.execPath, newCli, 'port', '--range', '24000-24499', '--owner', owner], env);
      if (a.code !== 0) throw new Error(`berth port exited ${a.code}: ${a.stderr.slice(0, 300)}`);
      if (i >= 2) cli.sockets.push(a.ms);
      if (base) {
        const b = await timeSpawn([process.execPath, join(base, 'dist', 'berth.cjs'), 'port', '--range', '24500-24999', '--owner', owner], env);
        if (b.code !== 0) throw new Error(`baseline berth port exited ${b.code}: ${b.stderr.slice(0, 300)}`);
        if (i >= 2) cli.files.push(b.ms);
      }
    }
  } finally {
    sleeper.kill();
  }

  ctx.log('leases: 256 concurrent allocators (64 processes x 4)');
  const concS = await concurrent(ctx, concChild, newLib, 'sockets');
  const concF = base ? await concurrent(ctx, concChild, join(base, 'dist', 'index.js'), 'files') : undefined;

  const f = (x: number | undefined, d = 1) => (x === undefined || Number.isNaN(x) ? '—' : fmt(x, d));
  const mS = median(cli.sockets);
  const mF = files ? median(cli.files) : undefined;
  const rows = [
    ['a whole stack: 256 sets of 1 port + a 16-port block, one reserveSet() (ms)', f(sockets.stackMedian), f(files?.stackMedian), '≤ 100 ms: ' + verdict(sockets.stackMedian <= 100)],
    ['… its release (ms)', f(median(sockets.releaseMs)), f(files ? median(files.releaseMs) : undefined), ''],
    ['`berth port --owner PID` wall time (ms, median)', f(mS), f(mF), mF === undefined ? '' : `no slower: ${verdict(mS <= mF * 1.05)}`],
    ['256 concurrent allocators (64 processes × 4 reserve()): ports handed out twice', String(concS.dups), concF ? String(concF.dups) : '—', `0: ${verdict(concS.dups === 0)}`],
    ['… ports handed out / allocations failed', `${concS.ok} / ${concS.failed}`, concF ? `${concF.ok} / ${concF.failed}` : '—', ''],
    ['leasing 10,000 ports (three blocks, ms)', f(sockets.make10k, 0), f(files?.make10k, 0), ''],
    [`lease table read with 10,000 leases (ms, median; ${sockets.listed} listed)`, f(sockets.tableMedian), f(files?.tableMedian), ''],
  ];
  const body = [
    table(['measure', 'kernel names (today)', `file store (${FILE_STORE_COMMIT.slice(0, 7)})`, 'target'], rows),
    '',
    `Both stores measured in the same run on the same machine: the file store is the last commit that had it (${FILE_STORE_COMMIT.slice(0, 12)}), extracted from git and built by bench/lib/baseline.ts. ` +
      `The stack and the 10,000 leases: bench/lease-domain-child.ts in a fresh network namespace (ephemeral range 40000-60999, descriptor limit raised to the hard limit), one library each, median of ${reps} repetitions after a warm-up; the file store in a private lease directory on ${ctx.tmp.startsWith('/tmp') ? '/tmp' : ctx.tmp}. ` +
      `The lease table read is \`currentLeases()\` (today: /proc/net/unix, without looking up holders; files: reading and judging every lease file). ` +
      `\`berth port\`: ${n} calls each after 2 warm-ups, interleaved, in the host's namespace, each owned by one sleeping process (today each call leaves a holder process). ` +
      `256 concurrent allocators: 64 processes in a fresh namespace (256 Node.js processes do not fit a small machine), each running 4 \`reserve()\` calls of one port from 20000-29999 at one common start time, holding the leases until all 64 have answered.`,
  ].join('\n');
  return {
    title,
    body,
    summary: [
      { what: "a stack's 256 sets + a 16-port block, one pass", measured: `${fmt(sockets.stackMedian, 1)} ms (files ${f(files?.stackMedian)} ms)`, target: '≤ 100 ms', verdict: verdict(sockets.stackMedian <= 100), goal: 'sets-256' },
      { what: '`berth port` today vs the file store', measured: `${fmt(mS, 1)} vs ${f(mF)} ms`, target: 'no slower', verdict: mF === undefined ? 'reported' : verdict(mS <= mF * 1.05) },
      { what: '256 concurrent allocators: duplicates', measured: String(concS.dups), target: '0', verdict: verdict(concS.dups === 0) },
      { what: 'lease table read at 10,000 leases', measured: `${fmt(sockets.tableMedian, 1)} ms (files ${f(files?.tableMedian)} ms)`, target: '—', verdict: 'reported' },
    ],
  };
}
