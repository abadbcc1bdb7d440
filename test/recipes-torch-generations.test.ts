/**
 * A torch.distributed job restarted as a group (issue 29): real gloo ranks (Debian's
 * python3-torch) of examples/recipes/torch-distributed/train.py under `restart: on-failure`,
 * each stack in a network namespace of its own. A failed rank ends its generation: every
 * rank is stopped, the old generation is gone before the next starts, the next generation
 * gets a fresh MASTER_PORT (unless `generations: keep`), and every generation's logs stay.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { cmdline, pidsWithEnv } from './helpers/procs.js';
import { NEED, requireNeeds } from './helpers/require.js';
import { box, events, type Box, type Ev } from './fixtures/up/harness.js';
import { up } from './fixtures/up/harness.js';

const TRAIN = resolve('examples/recipes/torch-distributed/train.py');
const START = /^rank (\d+) generation (\d+) master \S+:(\d+) pid (\d+)$/gm;
const SUM = /^rank (\d+)\/3 .*: all_reduce sum 6 \(want 6\)$/gm;

interface GenEv extends Ev {
  generation?: number;
}

function stack(t: TestContext, o: { limit?: number; grace?: string; keep?: boolean } = {}): Box {
  const b = box(`
services:
  trainer:
    job: true
    replicas: 3
    restart: on-failure
    restart_limit: ${o.limit ?? 3}
    stop_grace: ${o.grace ?? '2s'}
    ports:
      master: ${o.keep ? '{ shared: true, generations: keep }' : 'shared'}
    command: [/usr/bin/python3, ${TRAIN}]
    env:
      MASTER_ADDR: "{ports.master.host}"
      MASTER_PORT: "{ports.master}"
      RANK: "{rank}"
      WORLD_SIZE: "{world_size}"
      TORCHELASTIC_RESTART_COUNT: "{generation}"
      GLOO_SOCKET_IFNAME: lo
      PYTHONDONTWRITEBYTECODE: "1"
`);
  t.after(() => b.cleanup());
  return b;
}

function ready(t: TestContext): boolean {
  return requireNeeds(t, NEED.python3, NEED.torch) && requireNetns(t);
}

/** Every generation's logs, by file name. */
function logs(b: Box): Map<string, string> {
  const dir = join(b.runDir, 'logs');
  return new Map(readdirSync(dir).map((n) => [n, readFileSync(join(dir, n), 'utf8')]));
}

/** generation → the MASTER_PORT its ranks were given (from their first lines, one per rank). */
function portsByGeneration(b: Box): Map<number, Set<number>> {
  const out = new Map<number, Set<number>>();
  for (const [name, text] of logs(b)) {
    if (!name.endsWith('.err')) continue;
    for (const m of text.matchAll(START)) {
      const g = Number(m[2]);
      assert.ok(name.endsWith(`.g${g}.err`), `${name} holds generation ${g}'s output`);
      const set = out.get(g) ?? new Set<number>();
      set.add(Number(m[3]));
      out.set(g, set);
    }
  }
  return out;
}

function evs(b: Box): GenEv[] {
  return events(b) as GenEv[];
}

/** ms of the first event of generation g in `state` (any rank). */
function firstAt(list: GenEv[], g: number, state: string): number {
  const e = list.find((x) => x.generation === g && x.state === state);
  assert.ok(e, `no ${state} event in generation ${g}: ${JSON.stringify(list)}`);
  return Date.parse(e.t);
}

function noRanksLeft(tag: string): void {
  const left = pidsWithEnv(tag).map((p) => `${p} ${cmdline(p)}`).filter((c) => c.includes('train.py'));
  assert.deepEqual(left, [], 'ranks left running after berth exited');
}

function tagged(): { tag: string; env: NodeJS.ProcessEnv } {
  const id = randomUUID();
  return { tag: `BERTH_TORCH_GEN_TEST=${id}`, env: { BERTH_TORCH_GEN_TEST: id } };
}

describe('torch.distributed, restarted as a group', { concurrency: 2 }, () => {
  test('rank 2 exits 3 in generation 0 only: generation 1 completes its all_reduce, exit 0; a fresh MASTER_PORT; both generations\' logs kept', { timeout: 180_000 }, async (t) => {
    if (!ready(t)) return;
    const b = stack(t);
    const { tag, env } = tagged();
    const r = await up(b, [], { env: { ...env, FAIL_RANK: '2', FAIL_GENERATION: '0' }, timeoutMs: 170_000 }).result;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /berth: trainer: generation 0 ends: trainer\/2 exited with status 3; stopping every rank, then generation 1 of 4/);
    const sums = new Set([...(r.stdout + r.stderr).matchAll(SUM)].map((m) => Number(m[1])));
    assert.deepEqual([...sums].sort(), [0, 1, 2], r.stdout + r.stderr);
    const l = logs(b);
    assert.match(l.get('trainer-2.g0.err') ?? '', /failing on purpose before init_process_group/, 'generation 0\'s evidence is kept');
    assert.match(l.get('trainer-0.g1.out') ?? '', /all_reduce sum 6/);
    const ports = portsByGeneration(b);
    assert.deepEqual([...ports.keys()].sort(), [0, 1]);
    assert.equal(ports.get(0)!.size, 1, 'one MASTER_PORT for every rank of generation 0');
    assert.equal(ports.get(1)!.size, 1, 'one MASTER_PORT for every rank of generation 1');
    assert.notEqual([...ports.get(0)!][0], [...ports.get(1)!][0], 'generation 1 has a fresh MASTER_PORT');
    const doc = JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8'));
    assert.equal(doc.generation, 1);
    assert.equal(doc.shared.trainer.ports.master, [...ports.get(1)!][0]);
    assert.deepEqual(doc.replicas.map((x: { generation: number }) => x.generation), [1, 1, 1]);
    const list = evs(b);
    assert.ok(list.every((e) => e.generation === 0 || e.generation === 1), 'every event carries its generation');
    // The whole old generation exited before any rank of the next one started.
    const lastOld = Math.max(...list.filter((e) => e.generation === 0 && (e.state === 'exited' || e.state === 'failed')).map((e) => Date.parse(e.t)));
    assert.ok(lastOld <= firstAt(list, 1, 'starting'));
    noRanksLeft(tag);
  });

  test('a rank that fails in every generation: 1 + restart_limit generations, then its status, no rank left', { timeout: 180_000 }, async (t) => {
    if (!ready(t)) return;
    const b = stack(t, { limit: 1 });
    const { tag, env } = tagged();
    const r = await up(b, [], { env: { ...env, FAIL_RANK: '2' }, timeoutMs: 170_000 }).result;
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /trainer\/2 failed: rank 2 of 3 exited with status 3/);
    const l = logs(b);
    for (const g of [0, 1]) assert.match(l.get(`trainer-2.g${g}.err`) ?? '', /failing on purpose/, `generation ${g}`);
    assert.ok(!existsSync(join(b.runDir, 'logs', 'trainer-0.g2.err')), 'no third generation');
    assert.deepEqual([...portsByGeneration(b).keys()].sort(), [0, 1]);
    noRanksLeft(tag);
  });

  test('kill -9 of a rank in the middle of a collective: every rank restarts, generation 1 completes', { timeout: 180_000 }, async (t) => {
    if (!ready(t)) return;
    const b = stack(t);
    const { tag, env } = tagged();
    const run = up(b, [], { env: { ...env, STALL_RANK: '1', FAIL_GENERATION: '0' }, timeoutMs: 170_000 });
    // Rank 1 joined the group and stopped short of the all_reduce ranks 0 and 2 are in.
    const pidFile = join(b.runDir, 'data', 'trainer-1', 'stalled.pid');
    const deadline = Date.now() + 150_000;
    while (!existsSync(pidFile) || readFileSync(pidFile, 'utf8') === '') {
      assert.ok(Date.now() < deadline && run.child.exitCode === null, `rank 1 never stalled:\n${run.stderr()}`);
      await new Promise((res) => setTimeout(res, 100));
    }
    process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
    const r = await run.result;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /generation 0 ends: trainer\/1 was killed by SIGKILL/);
    assert.equal(new Set([...(r.stdout + r.stderr).matchAll(SUM)].map((m) => m[1])).size, 3, r.stdout + r.stderr);
    noRanksLeft(tag);
  });

  test('a rank that ignores SIGTERM is killed after stop_grace, before the next generation starts', { timeout: 180_000 }, async (t) => {
    if (!ready(t)) return;
    const b = stack(t, { grace: '1500ms' });
    const { tag, env } = tagged();
    const r = await up(b, [], { env: { ...env, FAIL_RANK: '2', FAIL_GENERATION: '0', IGNORE_TERM_RANK: '0' }, timeoutMs: 170_000 }).result;
    assert.equal(r.code, 0, r.stderr);
    const list = evs(b);
    const stubborn = list.find((e) => e.generation === 0 && e.replica === 0 && e.state === 'exited');
    assert.equal(stubborn?.signal, 'SIGKILL', JSON.stringify(list));
    const stopping = list.find((e) => e.generation === 0 && e.replica === 0 && e.state === 'stopping')!;
    assert.ok(Date.parse(stubborn!.t) - Date.parse(stopping.t) >= 1400, 'killed only after its stop_grace');
    assert.ok(Date.parse(stubborn!.t) <= firstAt(list, 1, 'starting'), 'the next generation started after the KILL');
    noRanksLeft(tag);
  });

  test('SIGTERM to berth between generations: a clean stop, exit 143, no generation 1, no survivors', { timeout: 180_000 }, async (t) => {
    if (!ready(t)) return;
    const b = stack(t, { grace: '20s' });
    const { tag, env } = tagged();
    // Rank 0 ignores TERM: the pause between generations lasts (up to its stop_grace).
    const run = up(b, [], { env: { ...env, FAIL_RANK: '2', FAIL_GENERATION: '0', IGNORE_TERM_RANK: '0' }, timeoutMs: 170_000 });
    await run.waitStderr(/generation 0 ends: trainer\/2 exited with status 3/, 150_000);
    run.child.kill('SIGTERM');
    const r = await run.result;
    assert.equal(r.code, 143, r.stderr);
    assert.match(r.stderr, /berth: stopped by SIGTERM/);
    assert.ok(!evs(b).some((e) => e.generation === 1), 'no rank of generation 1 was ever recorded');
    noRanksLeft(tag);
  });

  test('generations: keep: the shared port stays the same across generations', { timeout: 180_000 }, async (t) => {
    if (!ready(t)) return;
    const b = stack(t, { keep: true });
    const { tag, env } = tagged();
    const r = await up(b, [], { env: { ...env, FAIL_RANK: '2', FAIL_GENERATION: '0' }, timeoutMs: 170_000 }).result;
    assert.equal(r.code, 0, r.stderr);
    const ports = portsByGeneration(b);
    assert.deepEqual([...ports.keys()].sort(), [0, 1]);
    assert.deepEqual([...ports.get(1)!], [...ports.get(0)!], 'one MASTER_PORT in both generations');
    assert.equal(new Set([...(r.stdout + r.stderr).matchAll(SUM)].map((m) => m[1])).size, 3, r.stdout + r.stderr);
    noRanksLeft(tag);
  });
});
