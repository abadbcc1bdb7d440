/**
 * Multi-node rendezvous, emulated on one host (issue 12): the real coordinator code of
 * `berth up` (runMultiNodeStack) with N emulated Slurm nodes, its agents started by a stand-in
 * `srun` (bench/multinode-srun.ts), each node running 4 replicas; the coordinator polls the
 * node files nodes/<node>.json as on a cluster. Two kinds of agents:
 *   full      the real `berth up STACK --agent RUN_DIR` per node, 4 real replicas each
 *             (`sleep` holding its socket through fd handoff: a listening service of ~1 MB);
 *             on one host the N agents share 2 cores, so their start-up is serialized here
 *             as it is not on a cluster;
 *   protocol  the agents only speak the file protocol (writeNodeFile: starting, ready after
 *             ~BENCH agent time, stopped), so the coordinator's side is measured alone and N
 *             can reach cluster sizes.
 * Each run is one coordinator process in a fresh network namespace (bench/multinode-coordinator.ts).
 * Knobs: BERTH_BENCH_MN_FULL=8,32 (Ns of full agents), BERTH_BENCH_MN_PROTOCOL=8,32,128,1000,
 * BERTH_BENCH_MN_POLLS=50,100,250 (poll intervals tried at the largest protocol N),
 * BERTH_BENCH_MN_RUNS=3.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchContext } from './lib/context.js';
import { table, type Section } from './lib/markdown.js';
import { runChildInNetns } from './lib/netns.js';
import { fmt, median } from './lib/stats.js';

interface Run {
  n: number;
  mode: 'full' | 'protocol';
  pollMs: number;
  readyMs: number | null;
  teardownMs: number;
  exitCode: number;
  cpuToReadyMs: number;
  cpuMs: number;
  nodeFileReads: number;
  nodeFileWrites: number | null;
  rendezvousLagMs: number | null;
}

const env = process.env;
const numbers = (text: string | undefined, dflt: number[]): number[] => (text ? text.split(',').map(Number).filter((n) => n > 0) : dflt);
/** What the protocol agents take to be ready: about a 4-replica node stack on an idle node (section 9, N = 16: ~1 s). */
const AGENT_READY_MS = 1000;

async function once(ctx: BenchContext, coordinator: string, srun: string, n: number, mode: Run['mode'], pollMs: number): Promise<Run> {
  const dir = mkdtempSync(join(ctx.tmp, 'mn-'));
  try {
    return await runChildInNetns<Run>(
      coordinator,
      { n, replicas: 4, pollMs, mode, agentReadyMs: AGENT_READY_MS, berth: env.BERTH_BENCH_BIN ?? join(ctx.repoRoot, 'dist/berth.js'), srun, dir },
      { maxFiles: true, timeoutMs: 900_000 },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Row {
  n: number;
  mode: Run['mode'];
  pollMs: number;
  runs: Run[];
}

function row(r: Row): string[] {
  const ok = r.runs.filter((x) => x.readyMs !== null);
  const m = (k: (x: Run) => number) => median(ok.map(k));
  const ready = m((x) => x.readyMs!);
  const reads = m((x) => x.nodeFileReads);
  const lag = r.mode === 'protocol' ? m((x) => x.rendezvousLagMs ?? NaN) : NaN;
  return [
    String(r.n),
    r.mode,
    `${r.pollMs} ms`,
    ok.length < r.runs.length ? `${fmt(ready / 1000, 2)} s (${r.runs.length - ok.length} not ready)` : `${fmt(ready / 1000, 2)} s`,
    r.mode === 'protocol' ? `${fmt(m((x) => x.readyMs! - (x.rendezvousLagMs ?? NaN)) / 1000, 2)} s` : '—',
    Number.isFinite(lag) ? `${fmt(lag, 0)} ms` : '—',
    `${fmt(m((x) => x.cpuToReadyMs), 0)} ms`,
    `${fmt(reads, 0)}`,
    `${fmt(reads / (ready / 1000), 0)}/s`,
    r.mode === 'protocol' ? `${fmt((2 * r.n) / (ready / 1000), 0)}/s` : `${fmt((2 * r.n) / (ready / 1000), 0)}/s`,
    `${fmt(m((x) => x.teardownMs), 0)} ms`,
  ];
}

export async function benchMultinode(ctx: BenchContext): Promise<Section> {
  const scripts = await ctx.childScripts();
  const full = numbers(env.BERTH_BENCH_MN_FULL, ctx.quick ? [8] : [8, 32]);
  const protocol = numbers(env.BERTH_BENCH_MN_PROTOCOL, ctx.quick ? [8, 128] : [8, 32, 128, 1000]);
  const polls = numbers(env.BERTH_BENCH_MN_POLLS, [50, 100, 250]);
  const runs = numbers(env.BERTH_BENCH_MN_RUNS, [ctx.quick ? 1 : 3])[0]!;
  const coordinator = scripts['multinode-coordinator'];
  const srun = scripts['multinode-srun'];
  const rows: Row[] = [];
  const plan: { n: number; mode: Run['mode']; pollMs: number }[] = [
    ...full.map((n) => ({ n, mode: 'full' as const, pollMs: 100 })),
    ...protocol.map((n) => ({ n, mode: 'protocol' as const, pollMs: 100 })),
    ...polls.filter((p) => p !== 100).map((pollMs) => ({ n: Math.max(...protocol), mode: 'protocol' as const, pollMs })),
  ];
  for (const p of plan) {
    const r: Row = { ...p, runs: [] };
    for (let k = 0; k < runs; k++) {
      const x = await once(ctx, coordinator, srun, p.n, p.mode, p.pollMs);
      ctx.log(`multinode ${p.mode} N=${p.n} poll ${p.pollMs} ms: ready ${x.readyMs === null ? 'never' : `${(x.readyMs / 1000).toFixed(2)} s`}, lag ${x.rendezvousLagMs?.toFixed(0) ?? '-'} ms, coordinator cpu ${x.cpuToReadyMs.toFixed(0)} ms, ${x.nodeFileReads} node-file reads`);
      r.runs.push(x);
    }
    rows.push(r);
  }
  const body = [
    table(['nodes', 'agents', 'poll', 'start → stack ready', 'start → last node file ready', 'last node ready → seen', 'coordinator CPU to ready', 'node files read', 'reads', 'node-file writes', 'teardown'], rows.map(row)),
    '',
    `Median of ${runs} run${runs === 1 ? '' : 's'} per row, by bench/multinode-emulation.ts: each row is one coordinator (the code of \`berth up\` on a multi-node allocation: planNodes, runMultiNodeStack) in a fresh network namespace with a Slurm environment of N emulated nodes n[1-N], one service \`nodes: all\` with \`replicas: 4\`. ` +
      '`srun` is a stand-in (bench/multinode-srun.ts) that starts one agent per node on this host with the variables Slurm gives a step\'s tasks and hands its stdin to all of them (`--input=all`); `scontrol` answers NodeAddr 127.0.0.1. ' +
      '**full**: the agents are real `berth up --agent` processes running 4 real replicas each (a `sleep` holding its socket through `handoff: fd`), so on this 2-core host all agents\' start-up CPU is serialized. ' +
      `**protocol**: the agents only speak the file protocol with the real writeNodeFile() (starting, then ready with 4 endpoints after ${AGENT_READY_MS} ms ± 20%, stopped on "stop"), so the coordinator's side is measured alone and N reaches cluster sizes (the emulator writes every node file itself with writeFileAtomic, an fsync each, so on this host its own writes set "start → last node file ready"); "last node ready → seen" is the rendezvous lag: from the last node file's ready write to the coordinator's stack ready. ` +
      "**Coordinator CPU** is that process's own user+sys (process.cpuUsage) from the start to ready; **node files read** counts its readFileSync calls on nodes/*.json; **node-file writes** are the agents' (starting and ready: 2 per node) per second of start-up. Teardown: from stop() until every agent has written stopped and srun has exited.",
  ].join('\n');
  const big = rows.find((r) => r.mode === 'protocol' && r.n === Math.max(...protocol) && r.pollMs === 100);
  const bigReady = big ? median(big.runs.filter((x) => x.readyMs !== null).map((x) => x.readyMs!)) : NaN;
  return {
    title: '12. Multi-node rendezvous, emulated',
    body,
    summary: big ? [{ what: `multi-node rendezvous, ${big.n} emulated nodes × 4 replicas (file protocol)`, measured: `${fmt(bigReady / 1000, 2)} s to ready, ${fmt(median(big.runs.map((x) => x.cpuToReadyMs)), 0)} ms coordinator CPU`, target: '—', verdict: 'reported' }] : [],
  };
}
