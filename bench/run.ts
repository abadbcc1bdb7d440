/**
 * `npm run bench`: runs berth's benchmarks side by side in one run and writes
 * docs/benchmarks.md (atomically). Progress goes to stderr. Numbers are reported, never
 * asserted: the tests check correctness, this file records what a machine measured.
 *
 *   node --import tsx bench/run.ts [--quick] [--only alloc,port,table,dup,ready,stack,binary,vllm,scale,scale-load,scale-alloc,multinode,set-alloc,busy,leases,foreign,templates,generations] [--out FILE]
 *
 * With --only or --quick the report goes to stdout unless --out is given, so a partial or
 * rough run never overwrites the committed numbers.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { writeFileAtomic } from '../src/util/atomic-write.js';
import { benchAllocRate } from './alloc-rate.js';
import { benchBinary } from './binary-startup.js';
import { benchDuplicates } from './duplicates.js';
import { BenchContext, repoRoot } from './lib/context.js';
import { GOALS, table, type Section } from './lib/markdown.js';
import { netnsUnavailable } from './lib/netns.js';
import { fmt } from './lib/stats.js';
import { benchPortCli } from './port-cli.js';
import { benchReadyLatency } from './ready-latency.js';
import { benchSocketTable } from './socket-table.js';
import { benchStackOverhead } from './stack-overhead.js';
import { benchScale, benchScaleAlloc, benchScaleLoad } from './scale-up.js';
import { benchMultinode } from './multinode-emulation.js';
import { benchVllmStacks } from './vllm-stacks.js';
import { benchSetAlloc } from './set-alloc.js';
import { benchBusyHost } from './busy-host.js';
import { benchLeaseDomain } from './lease-domain.js';
import { benchForeignAudit } from './foreign-audit.js';
import { benchTemplateCheck } from './template-check.js';
import { benchGenerations, benchGenerationsNodes } from './generations.js';

async function benchGenerationsSection(): Promise<Section> {
  const r = await benchGenerations();
  const n = await benchGenerationsNodes();
  const target = r.stopGraceMs + 1_000;
  const nodeTarget = r.stopGraceMs + 2_000;
  const rows = [
    ['one host, 3 ranks', fmt(r.medianMs, 0), r.samples.join(', '), `≤ ${target}`],
    'why' in n ? ['3 nodes (test Slurm cluster), one rank each', 'not measured', n.why, `≤ ${nodeTarget}`] : ['3 nodes (test Slurm cluster), one rank each', fmt(n.medianMs, 0), n.samples.join(', '), `≤ ${nodeTarget}`],
  ];
  const body = [
    table(["from a rank's failure to every rank of the next generation started", 'median ms', 'every run', 'target ms'], rows),
    '',
    `bench/generations.ts, ${r.samples.length} runs each, \`stop_grace: ${r.stopGraceMs}ms\`, the other ranks end on SIGTERM at once; both times from berth's own events.jsonl (across nodes: each agent's). In between: every rank stopped, the old generation proven gone, a fresh shared port, the next generation started (across nodes: in place, every node's old generation gone before any starts the next; the agents stay).`,
  ].join('\n');
  const summary: Section['summary'] = [{ what: 'rank failure → next generation started (one host)', measured: `${fmt(r.medianMs, 0)} ms`, target: `≤ ${target} ms`, verdict: r.medianMs <= target ? 'met' : 'missed' }];
  if (!('why' in n)) summary.push({ what: 'rank failure → next generation started (3 nodes)', measured: `${fmt(n.medianMs, 0)} ms`, target: `≤ ${nodeTarget} ms`, verdict: n.medianMs <= nodeTarget ? 'met' : 'missed' });
  return { title: '18. A job restarted as a group: failure to next generation', body, summary };
}

interface Bench {
  key: string;
  title: string;
  needsNetns: boolean;
  run: (ctx: BenchContext) => Promise<Section>;
}

async function benchReady(): Promise<Section> {
  const r = await benchReadyLatency();
  const body = [
    table(
      ['readiness detected by', 'median ms from the service\'s listen()', 'samples'],
      [
        ['`berth run --ready …` (ready line)', fmt(r.berthMedianMs, 1), String(r.samples)],
        ['a `curl` loop sleeping 0.5 s between tries', fmt(r.curlLoopMedianMs, 1), String(r.samples)],
        ['`berth run` (no probe), a port berth assigned: owned', fmt(r.assignedMedianMs, 1), String(r.samples)],
        ['`berth run --port learn` (no probe), a port the service chose (port 0): learned', fmt(r.learnedMedianMs, 1), String(r.samples)],
      ],
    ),
    '',
    `Median of ${r.samples} launches each, measured by bench/ready-latency.ts: the time from the service's listen() callback to the moment readiness is reported, both taken on the host's monotonic clock; each service waits a random delay before listening so neither side profits from a lucky polling phase.`,
  ].join('\n');
  return {
    title: '5. `berth run` readiness latency',
    body,
    summary: [
      { what: 'readiness latency, `berth run` vs curl loop', measured: `${fmt(r.berthMedianMs, 1)} vs ${fmt(r.curlLoopMedianMs, 1)} ms`, target: '—', verdict: 'reported' },
      { what: 'a learned port reported after listen() (vs an assigned one)', measured: `${fmt(r.learnedMedianMs, 1)} vs ${fmt(r.assignedMedianMs, 1)} ms`, target: '≤ 20 ms', verdict: r.learnedMedianMs <= 20 ? 'met' : 'missed' },
    ],
  };
}

async function benchStack(): Promise<Section> {
  const r = await benchStackOverhead();
  const body = [
    table(
      ['measure', 'median'],
      [
        [`last service's own readiness → berth reports the stack ready (${r.services} services)`, `${fmt(r.readyToReportedMs, 1)} ms`],
        [`berth's own CPU (user+sys) for a whole ${r.services}-service stack run`, `${fmt(r.cpuMs, 0)} ms`],
      ],
    ),
    '',
    `A stack of ${r.services} trivial Node HTTP servers with HTTP readiness probes, started by \`berth up\`, measured by bench/stack-overhead.ts over several runs: each server logs the monotonic time its listen() callback ran; berth's "stack ready" line is timestamped on the same clock; berth's CPU is its own user+sys time (not the services') for start, readiness, SIGTERM and teardown.`,
  ].join('\n');
  return {
    title: '6. `berth up` start-up overhead',
    body,
    summary: [{ what: `\`berth up\` overhead, ${r.services} services`, measured: `${fmt(r.readyToReportedMs, 1)} ms ready→reported, ${fmt(r.cpuMs, 0)} ms CPU`, target: '—', verdict: 'reported' }],
  };
}

const BENCHES: Bench[] = [
  { key: 'alloc', title: '1. Allocation rate (in-process)', needsNetns: true, run: benchAllocRate },
  { key: 'port', title: '2. `berth port` wall time', needsNetns: false, run: benchPortCli },
  { key: 'table', title: '3. Socket-table read and parse', needsNetns: true, run: benchSocketTable },
  { key: 'dup', title: '4. Duplicate ports under concurrency', needsNetns: true, run: benchDuplicates },
  { key: 'ready', title: '5. `berth run` readiness latency', needsNetns: false, run: benchReady },
  { key: 'stack', title: '6. `berth up` start-up overhead', needsNetns: false, run: benchStack },
  { key: 'binary', title: '7. Single executable start-up and size', needsNetns: false, run: benchBinary },
  { key: 'vllm', title: '8. Eight vLLM-like stacks on one host', needsNetns: true, run: benchVllmStacks },
  { key: 'scale', title: '9. `berth up` at scale, beside the floor', needsNetns: true, run: benchScale },
  { key: 'scale-load', title: '10. `berth up` on a loaded host', needsNetns: true, run: benchScaleLoad },
  { key: 'scale-alloc', title: "11. A whole stack's ports in one pass", needsNetns: true, run: benchScaleAlloc },
  { key: 'multinode', title: '12. Multi-node rendezvous, emulated', needsNetns: true, run: benchMultinode },
  { key: 'set-alloc', title: '13. A port set with a 100-port block', needsNetns: true, run: benchSetAlloc },
  { key: 'busy', title: '14. A busy host: filtered socket reads and `berth port`', needsNetns: true, run: benchBusyHost },
  { key: 'leases', title: '15. Leases: kernel names vs the file store', needsNetns: true, run: benchLeaseDomain },
  { key: 'foreign', title: '16. The foreign-listener check: its cost', needsNetns: true, run: benchForeignAudit },
  { key: 'templates', title: '17. Template checking by number of tags', needsNetns: false, run: benchTemplateCheck },
  { key: 'generations', title: '18. A job restarted as a group: failure to next generation', needsNetns: true, run: benchGenerationsSection },
];

/** One issue's goals, each from the section that measured it in this run. */
function goalsTable(summary: NonNullable<Section['summary']>, issue: number): string {
  const rows = GOALS.filter(([, of]) => of === issue).map(([key, , figure, target]) => {
    const got = summary.find((x) => x.goal === key);
    return [figure, got?.measured ?? 'not measured in this run', target, got?.verdict ?? '—'];
  });
  return table([`figure (issue ${issue})`, 'measured', 'goal', 'verdict'], rows, true);
}

function sh(cmd: string, args: string[]): string | undefined {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

function machine(loadAtStart: number): string[][] {
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string };
  const commit = sh('git', ['-C', repoRoot, 'rev-parse', '--short', 'HEAD']);
  const dirty = commit && sh('git', ['-C', repoRoot, 'status', '--porcelain']) ? ' (with uncommitted changes)' : '';
  return [
    ['date', new Date().toISOString().replace(/\.\d+Z$/, 'Z')],
    ['nproc', String(availableParallelism())],
    ['CPU', cpus()[0]?.model.trim() ?? 'unknown'],
    ['memory', `${(totalmem() / 2 ** 30).toFixed(1)} GiB`],
    ['kernel', `Linux ${release()}`],
    ['node', process.version],
    ['ephemeral range (host)', (sh('cat', ['/proc/sys/net/ipv4/ip_local_port_range']) ?? '?').replace(/\s+/, '-')],
    // Other work on the box skews every number; this says how busy it was.
    ['load average (1 min), start / end', `${loadAtStart.toFixed(2)} / ${(loadavg()[0] ?? 0).toFixed(2)}`],
    ['berth', `${pkg.version}${commit ? ` at ${commit}${dirty}` : ' (no commit yet)'}`],
  ];
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { quick: { type: 'boolean' }, only: { type: 'string' }, out: { type: 'string' } } });
  const only = values.only?.split(',').map((s) => s.trim());
  const unknown = only?.filter((k) => !BENCHES.some((b) => b.key === k)) ?? [];
  if (unknown.length > 0) throw new Error(`--only ${unknown.join(',')}: expected some of ${BENCHES.map((b) => b.key).join(',')}`);
  const partial = only !== undefined || values.quick === true;
  const out = values.out ?? (partial ? undefined : join(repoRoot, 'docs', 'benchmarks.md'));
  const ctx = new BenchContext(values.quick === true);
  const netnsWhy = netnsUnavailable();
  const started = Date.now();
  const loadAtStart = loadavg()[0] ?? 0;
  const sections: Section[] = [];
  try {
    for (const b of BENCHES) {
      if (only && !only.includes(b.key)) continue;
      if (b.needsNetns && netnsWhy !== undefined) {
        sections.push({ title: b.title, body: `_Not measured: needs a network namespace (${netnsWhy})._`, summary: [{ what: b.title.replace(/^\d+\. /, ''), measured: 'not measured', target: '—', verdict: 'skipped' }] });
        ctx.log(`${b.title}: skipped (${netnsWhy})`);
        continue;
      }
      const t0 = Date.now();
      ctx.log(`${b.title}: start`);
      try {
        sections.push(await b.run(ctx));
        ctx.log(`${b.title}: done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      } catch (e) {
        const msg = (e as Error).message;
        ctx.log(`${b.title}: FAILED: ${msg}`);
        // The first lines say what went wrong; the rest (usage text, stacks) is for the log.
        const first = msg.split('\n').map((l) => l.trim()).filter((l) => l !== '').slice(0, 2).join(' ').slice(0, 300);
        sections.push({ title: b.title, body: `_Not measured in this run: ${first}_`, summary: [{ what: b.title.replace(/^\d+\. /, ''), measured: 'failed', target: '—', verdict: 'failed' }] });
      }
    }
  } finally {
    ctx.cleanup();
  }
  const summary = sections.flatMap((s) => s.summary ?? []);
  const doc = [
    '# berth benchmarks',
    '',
    `Generated by \`npm run bench\` (bench/run.ts) in one run of ${((Date.now() - started) / 1000).toFixed(0)} s. ` +
      'These are measurements on the machine below, not assertions: the tests check correctness, this file records speed and the race comparison. ' +
      'Every number is a median of several repetitions; each section says how many.',
    '',
    '## Machine',
    '',
    table(['machine', ''], machine(loadAtStart), true),
    '',
    "## Goals of issue 31 (start-up at the runtime's floor; CPU per replica)",
    '',
    goalsTable(summary, 31),
    '',
    '## Goals of issue 23 (a busy node), kept by issue 31',
    '',
    goalsTable(summary, 23),
    '',
    'Each measured in this run (ratios side by side, paired where it says so); the sections below say how. docs/scale.md §2 explains each miss.',
    '',
    '## Summary',
    '',
    table(['benchmark', 'measured', 'target', 'verdict'], summary.map((s) => [s.what, s.measured, s.target, s.verdict]), true),
    '',
    ...sections.flatMap((s) => [`## ${s.title}`, '', s.body, '']),
  ].join('\n');
  if (out) {
    const path = resolve(out);
    mkdirSync(dirname(path), { recursive: true });
    writeFileAtomic(path, doc, 0o644);
    ctx.log(`wrote ${path}`);
  } else {
    process.stdout.write(doc);
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
