/**
 * Fault injection (issue 9 §7): berth killed with SIGKILL or SIGTERM at seeded random points
 * of `port`, `run` and `up` — allocation, spawn, ownership, probe, ready, teardown — each
 * trial in a network namespace of its own, so with a lease domain of its own
 * (test/fixtures/fault/trial.sh does one trial). After each:
 *   - no process of the run is alive 2 s after the kill (every process berth starts carries
 *     the trial's FAULT_TRIAL=<uuid> from berth's environment; its watchdog too);
 *   - `berth port`: all or none: 0 or 4 port names (the owner stays alive; a set committed
 *     whole and killed before its print stays the owner's, in its holder), no lease of a
 *     printed set gone while its owner lives, every other port free at once;
 *   - `run`/`up`: no lease is left once the run's processes are gone (the kernel closes them
 *     with their holders), and the whole range can be leased again;
 *   - `up`: endpoints.json claims no replica as live.
 * FAULT_SEED=N replays a run; FAULT_TRIALS=N sets the number of trials (default 16 per
 * command, 32 for `port`). The trial count and every failure are printed.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { requireNetns, runInNetns } from './helpers/netns.js';
import { waitGone } from './helpers/procs.js';
import { BERTH, kv, NODE, ROOT, SERVICES } from './fixtures/services/launch-harness.js';
import { seeded as prng } from './helpers/seeded.js';

const SEED = Number(process.env.FAULT_SEED ?? 9_2026);
/** Trials per command; `port` trials are cheap, so it gets more. */
const TRIALS = Number(process.env.FAULT_TRIALS ?? 16);
const TRIAL_SH = join(ROOT, 'test/fixtures/fault/trial.sh');


type Mode = 'port' | 'run' | 'up';
type Trigger = 'time' | 'ready' | 'teardown';

interface Trial {
  n: number;
  mode: Mode;
  trigger: Trigger;
  sig: 'KILL' | 'TERM';
  delayMs: number;
  readyAfter: number;
}

/**
 * Kill points spread over the phases: early times hit allocation and spawn, later ones
 * ownership and probe. `portMs`: how long a whole `berth port` takes here and now (Node's
 * start dominates and varies with load): its kills land around the moment the set is made.
 */
function plan(mode: Mode, count: number, seed: number, portMs = 300): Trial[] {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const out: Trial[] = [];
  for (let n = 0; n < count; n++) {
    const trigger: Trigger = mode === 'port' ? 'time' : pick(['time', 'time', 'ready', 'teardown'] as const);
    // Node starts in 50–300 ms depending on load: spans reach past the end of each phase.
    const span = mode === 'run' ? 1_200 : 2_000;
    const delayMs = mode === 'port' ? Math.floor(portMs * (0.6 + 2.4 * rnd())) : trigger === 'time' ? Math.floor(rnd() * span) : Math.floor(rnd() * 400);
    out.push({ n, mode, trigger, sig: pick(['KILL', 'KILL', 'TERM'] as const), delayMs, readyAfter: Math.floor(rnd() * 400) });
  }
  return out;
}

const describeTrial = (t: Trial) => `${t.mode}#${t.n} SIG${t.sig} at ${t.trigger}+${t.delayMs}ms (services ready after ${t.readyAfter}ms)`;

/** ms from the kill until no process of the run was left, per trial (for the report). */
const gone: number[] = [];

/** Runs one trial; returns where the kill landed and what went wrong (empty: nothing). */
async function runTrial(t: Trial): Promise<{ landed: string; problems: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-fault-'));
  const id = randomUUID();
  const mark = `FAULT_TRIAL=${id}`;
  const env = {
    ...process.env,
    NO_COLOR: '1',
    BERTH_STATE_DIR: join(dir, 'state'),
    // The script runs "$NODE" "$BERTH_CLI": the clone's path may hold spaces.
    BERTH_CLI: BERTH,
    NODE,
    SVC: join(SERVICES, '..', 'up', 'svc.mjs'),
    DAEMON: join(SERVICES, 'service.mjs'),
    TRIAL_ID: id,
    DIR: dir,
    READY_AFTER: String(t.readyAfter),
  };
  const problems: string[] = [];
  let landed = '';
  try {
    const r = await runInNetns({}, ['sh', TRIAL_SH, t.mode, t.trigger, t.sig, String(t.delayMs)], { env, timeoutMs: 40_000 });
    const v = kv(r.stdout);
    const berthErr = () => {
      try {
        return JSON.stringify(readFileSync(join(dir, 'err'), 'utf8').slice(-600));
      } catch {
        return '(none)';
      }
    };
    if (!v.has('RC')) return { landed: 'no result', problems: [`trial script failed (exit ${r.code}): ${r.stderr.slice(0, 400)}; its output: ${JSON.stringify(r.stdout.slice(-300))}; berth's stderr: ${berthErr()}`] };
    // Killed "at ready" only counts if berth got there: one that failed before is a failure of its own.
    if (v.get('READY_SEEN') === '0') problems.push(`berth never said it was ready (exit ${v.get('RC')}); its stderr: ${berthErr()}`);
    landed = landing(t, v);
    const left = (await waitGone(mark, Math.max(0, 2_000 - Number(v.get('GONE_MS') ?? 0)))).left;
    if (left.length > 0) problems.push(`alive 2 s after the kill: ${left.join('; ')}`);
    else if (Number(v.get('GONE_MS')) > 2_000) problems.push(`the run's processes took ${v.get('GONE_MS')} ms to go`);
    gone.push(Number(v.get('GONE_MS')));
    const leases = Number(v.get('LEASES'));
    const reclaim = v.get('RECLAIM_RC');
    if (t.mode === 'port') {
      const printed = Number(v.get('PRINTED'));
      if (printed !== 0 && printed !== 4) problems.push(`printed ${printed} of 4 ports`);
      if (printed === 4 && leases < 4) problems.push(`a lease of the printed set was removed while its owner lives (${leases} port names)`);
      if (leases !== 0 && leases !== 4) problems.push(`partial lease set: ${leases} port names of 4`);
      // The reclaim asks for every port but the live set's (trial.sh): a set committed whole and
      // killed before its print is the owner's, an unfinished one must be reclaimable.
      if (reclaim !== '0') problems.push(`the rest of the range cannot be leased (exit ${reclaim}): ${v.get('RECLAIM_ERR')}`);
    } else {
      if (leases !== 0) problems.push(`${leases} lease(s) left after the run's processes are gone`);
      if (reclaim !== '0') problems.push(`the range cannot be leased again (exit ${reclaim}): ${v.get('RECLAIM_ERR')}`);
      if (t.mode === 'up' && v.has('CLAIMED_LIVE') && v.get('CLAIMED_LIVE') !== '0') problems.push(`endpoints.json still claims ${v.get('CLAIMED_LIVE')} live replica(s)`);
    }
    if (t.sig === 'TERM' && t.mode !== 'port' && t.trigger !== 'teardown' && !['130', '143', '0', '69', '70', '75'].includes(v.get('RC')!)) {
      problems.push(`SIGTERM: unexpected exit ${v.get('RC')}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { landed, problems };
}

/** Where the kill landed, as far as the outside can tell (for the report). */
function landing(t: Trial, v: Map<string, string>): string {
  if (t.mode === 'port') {
    if (Number(v.get('PRINTED')) > 0) return 'after the set was complete';
    if (Number(v.get('OWNED')) === 4) return 'after the commit, before the print';
    return Number(v.get('LEASES')) > 0 ? 'during allocation' : 'before allocation';
  }
  return `${t.trigger}, exit ${v.get('RC')}`;
}

/** Median wall time of a whole `berth port --count 4` in a fresh namespace, as the trials run it. */
async function timePort(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-fault-'));
  try {
    const ms: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await runInNetns({}, ['sh', '-c', `t0=$(date +%s%N); "${NODE}" "${BERTH}" port --range 20000-20007 --count 4 >/dev/null; echo "MS=$(( ($(date +%s%N) - t0) / 1000000 ))"`], { env: { ...process.env, BERTH_STATE_DIR: join(dir, String(i)) } });
      ms.push(Number(kv(r.stdout).get('MS')));
    }
    return ms.sort((a, b) => a - b)[1]!;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs the trials two at a time (2 shared cores); reports and asserts. */
async function campaign(ctx: TestContext, mode: Mode, seed: number, count: number): Promise<void> {
  if (!requireNetns(ctx)) return;
  const portMs = mode === 'port' ? await timePort() : undefined;
  const trials = plan(mode, count, seed, portMs);
  const outcomes = new Map<string, number>();
  gone.length = 0;
  const failures: string[] = [];
  const queue = [...trials];
  const t0 = performance.now();
  await Promise.all(
    [0, 1].map(async () => {
      for (let t = queue.shift(); t; t = queue.shift()) {
        const { landed, problems } = await runTrial(t);
        outcomes.set(landed, (outcomes.get(landed) ?? 0) + 1);
        for (const p of problems) failures.push(`${describeTrial(t)}: ${p}`);
      }
    }),
  );
  const s = ((performance.now() - t0) / 1000).toFixed(1);
  ctx.diagnostic(`berth ${mode}: ${trials.length} trials (seed ${seed}) in ${s} s, ${failures.length} failure(s)${portMs ? ` (a whole berth port took ${portMs} ms)` : ''}`);
  ctx.diagnostic(`killed: ${[...outcomes].sort().map(([k, n]) => `${k} ×${n}`).join('; ')}`);
  const sorted = [...gone].sort((a, b) => a - b);
  if (mode !== 'port') ctx.diagnostic(`kill → every process gone: median ${sorted[sorted.length >> 1]} ms, max ${sorted.at(-1)} ms`);
  for (const f of failures) ctx.diagnostic(f);
  assert.deepEqual(failures, [], `berth ${mode}: ${failures.length} of ${trials.length} trials failed (FAULT_SEED=${SEED} replays them)`);
}

describe('fault injection', { concurrency: 1 }, () => {
  test('berth port killed mid-allocation: no partial set, no live lease lost, the rest reclaimable', (t) => campaign(t, 'port', SEED, 2 * TRIALS));
  test('berth run killed at every phase: nothing of it survives, its leases are reclaimable', (t) => campaign(t, 'run', SEED + 1, TRIALS));
  test('berth up killed at every phase: nothing of it survives, leases reclaimable, endpoints.json claims nothing', (t) => campaign(t, 'up', SEED + 2, TRIALS));
});
