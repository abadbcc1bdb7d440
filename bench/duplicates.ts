/**
 * Benchmark 4: duplicate ports under concurrency. N allocator processes start together in
 * a fresh network namespace, each takes one port from one shared range and binds it for
 * real ~50 ms later; berth against get-port, portfinder and a naive bind-and-release scan.
 */
import type { TrialOutcome } from './dup-coordinator.js';
import type { AllocatorKind, DupChildResult } from './dup-child.js';
import type { BenchContext } from './lib/context.js';
import { table, type Section } from './lib/markdown.js';
import { runChildInNetns } from './lib/netns.js';
import { fmt, max, median, verdict } from './lib/stats.js';

const LO = 20000;
const HI = 20999;
const BIND_DELAY_MS = 50;
const KINDS: AllocatorKind[] = ['berth', 'get-port', 'portfinder', 'naive'];
const LABEL: Record<AllocatorKind, string> = {
  berth: 'berth `reserve()` (lease + hold, unhold before bind)',
  'get-port': 'get-port 7 `getPort({port: portNumbers(lo, hi)})`',
  portfinder: 'portfinder 1 `getPortPromise({port: lo, stopPort: hi})`',
  naive: 'naive bind-and-release scan from lo',
};

interface Trial {
  duplicates: number;
  failedBinds: number;
  allocErrors: number;
  lost: number;
  allocMsMedian: number;
  allocMsMax: number;
  lateMsMax: number;
  ms: number;
  firstError?: string;
}

function summarize(o: TrialOutcome): Trial {
  const done = o.results.filter((r): r is DupChildResult => !('lost' in r));
  const ports = done.filter((r) => r.port !== undefined).map((r) => r.port!);
  const errs = done.filter((r) => r.allocError !== undefined);
  const t: Trial = {
    duplicates: ports.length - new Set(ports).size,
    failedBinds: done.filter((r) => r.port !== undefined && !r.bindOk).length,
    allocErrors: errs.length,
    lost: o.results.length - done.length,
    allocMsMedian: median(done.map((r) => r.allocMs)),
    allocMsMax: max(done.map((r) => r.allocMs)),
    lateMsMax: max(done.map((r) => r.lateMs)),
    ms: o.ms,
  };
  if (errs[0]?.allocError) t.firstError = errs[0].allocError;
  return t;
}

/** "3" when all trials agree, else "median (max M)". */
function cell(xs: number[]): string {
  const m = median(xs);
  const mx = max(xs);
  return m === mx ? fmt(m, 0) : `${fmt(m, m % 1 === 0 ? 0 : 1)} (max ${fmt(mx, 0)})`;
}

export async function benchDuplicates(ctx: BenchContext): Promise<Section> {
  const title = '4. Duplicate ports under concurrency';
  // Without berth's allocator the others still run: their numbers stand on their own.
  let lib: string | undefined;
  let from: string;
  try {
    ({ path: lib, from } = await ctx.berthLib(['reserve']));
  } catch (e) {
    from = `not measured: ${(e as Error).message}`;
    ctx.log(`duplicates: berth ${from}`);
  }
  const kinds = KINDS.filter((k) => k !== 'berth' || lib !== undefined);
  const scripts = await ctx.childScripts();
  const levels = ctx.quick ? [8, 32] : [8, 32, 128, 256];
  const reps = ctx.quick ? 1 : 3;
  const trials = new Map<string, Trial[]>();
  const loadMs: number[] = [];
  for (const n of levels) {
    // One set of n processes per level serves every trial; allocators take turns within a
    // repetition, in a rotated order, so none always runs first (cold) or last.
    const plan = Array.from({ length: reps }, (_, rep) => kinds.map((_, i) => kinds[(i + rep) % kinds.length]!)).flat();
    const t0 = Date.now();
    const res = await runChildInNetns<{ loadMs: number; outcomes: TrialOutcome[] }>(
      scripts['dup-coordinator'],
      {
        child: scripts['dup-child'],
        n,
        timeoutMs: 120_000,
        childConfig: { lo: LO, hi: HI, lib, bindDelayMs: BIND_DELAY_MS },
        trials: plan.map((kind) => (kind === 'berth' ? { kind, stateDir: ctx.privateDir(`dup-state-${n}`) } : { kind })),
      },
      { maxFiles: true, timeoutMs: 30_000 + plan.length * 120_000 },
    );
    loadMs.push(res.loadMs);
    for (const o of res.outcomes) {
      const t = summarize(o);
      const key = `${o.kind}:${n}`;
      trials.set(key, [...(trials.get(key) ?? []), t]);
    }
    ctx.log(`duplicates x${n}: ${n} processes loaded in ${res.loadMs} ms; ${res.outcomes.length} trials in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    for (const k of kinds) {
      const ts = trials.get(`${k}:${n}`) ?? [];
      ctx.log(`  ${k}: duplicates ${ts.map((t) => t.duplicates).join('/')}, failed binds ${ts.map((t) => t.failedBinds).join('/')}, errors ${ts.map((t) => t.allocErrors + t.lost).join('/')}${ts.find((t) => t.firstError)?.firstError ? ` (${ts.find((t) => t.firstError)!.firstError})` : ''}`);
    }
  }
  const get = (kind: AllocatorKind, n: number) => trials.get(`${kind}:${n}`) ?? [];
  const header = ['allocator', ...levels.map((n) => `${n} procs`)];
  const dupRows = kinds.map((k) => [LABEL[k], ...levels.map((n) => cell(get(k, n).map((t) => t.duplicates)))]);
  const bindRows = kinds.map((k) => [LABEL[k], ...levels.map((n) => cell(get(k, n).map((t) => t.failedBinds)))]);
  const errRows = kinds.map((k) => [LABEL[k], ...levels.map((n) => cell(get(k, n).map((t) => t.allocErrors + t.lost)))]);
  const latRows = kinds.map((k) => [LABEL[k], ...levels.map((n) => {
    const ts = get(k, n);
    return `${fmt(median(ts.map((t) => t.allocMsMedian)), 0)} / ${fmt(median(ts.map((t) => t.allocMsMax)), 0)}`;
  })]);
  const berthDup = lib === undefined ? NaN : levels.reduce((s, n) => s + max(get('berth', n).map((t) => t.duplicates)), 0);
  const berthBind = lib === undefined ? NaN : levels.reduce((s, n) => s + max(get('berth', n).map((t) => t.failedBinds)), 0);
  const late = max([...trials.values()].flat().map((t) => t.lateMsMax));
  const errors = [...trials.entries()].flatMap(([k, ts]) => ts.filter((t) => t.firstError).map((t) => `${k}: ${t.firstError}`));
  const body = [
    '**Duplicate ports handed out** (allocations that returned a port another process of the same trial also got):',
    '',
    table(header, dupRows),
    '',
    `**Failed real binds** (the process then listened on its port ${BIND_DELAY_MS} ms after getting it, as a service would, and got EADDRINUSE):`,
    '',
    table(header, bindRows),
    '',
    '**Allocation errors** (no port returned, or the process was lost):',
    '',
    table(header, errRows),
    '',
    '**Time from the start barrier to a port in hand, ms** (median process / slowest process):',
    '',
    table(header, latRows),
    '',
    `Each cell is the median over ${reps} trial${reps === 1 ? '' : 's'} (with the maximum when trials differ). Each level runs in its own fresh network namespace; all processes share the range ${LO}-${HI}. ` +
      `For each level, that many node processes are started at once in the namespace and load every allocator (${loadMs.map((ms, i) => `${levels[i]}: ${fmt(ms / 1000, 1)} s`).join(', ')} until all were loaded); they then serve every trial of that level, allocators taking turns in a rotated order. ` +
      'For a trial, the coordinator hands all processes one start time (ms since epoch) ~0.2 s ahead and each sleeps until it, allocates, and binds; when all have reported, they close their listeners (berth: release) and the next trial starts. ' +
      `The latest wake-up after the start time in any trial was ${fmt(late, 0)} ms (two cores shared by up to ${max(levels)} processes). ` +
      'Each process keeps its real listener open until all have reported, so a second service on the same port fails as it would in life. ' +
      `berth processes share the level's network namespace, whose abstract socket names are the lease domain (docs/leases.md: every process of the namespace sees every lease; the previous trial's are all released before the next starts), each with a fresh private BERTH_STATE_DIR per trial, and use \`reserve({source: range, count: 1, ttlMs: 120000})\`, then \`unhold()\` right before the real bind (the \`release\` handoff). Library: ${from}.`,
    ...(errors.length > 0 ? ['', `Allocation errors seen: ${[...new Set(errors)].slice(0, 8).join('; ')}.`] : []),
  ].join('\n');
  return {
    title,
    body,
    summary: [
      lib === undefined
        ? { what: 'berth duplicates under concurrency', measured: 'not measured', target: '0 duplicates', verdict: 'skipped' }
        : { what: `berth duplicates at ${levels.join(', ')} processes`, measured: `${berthDup} duplicates, ${berthBind} failed binds (worst trial per level, summed)`, target: '0 duplicates', verdict: verdict(berthDup === 0) },
    ],
  };
}
