/**
 * The torch.distributed recipe (examples/recipes/torch-distributed), run for real with Debian's
 * python3-torch (installed by .ci/run): gloo ranks started by `berth up` as one job, the
 * rendezvous port (MASTER_PORT) one port leased for all ranks. On one host in a fresh network
 * namespace; across the three nodes of the test Slurm cluster (test/helpers/slurm.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test, type TestContext } from 'node:test';
import { BERTH, berth, tempStateDir } from './helpers/cli.js';
import { requireNetns, type RunResult } from './helpers/netns.js';
import { NEED, requireNeeds } from './helpers/require.js';
import { cmdline, pidsWithEnv } from './helpers/procs.js';
import { describeJob, requireSlurm, sbatch, startCluster, stopCluster } from './helpers/slurm.js';

const RECIPE = resolve('examples/recipes/torch-distributed');
/** The namespace's ephemeral range, set explicitly so "outside it" means something. */
const EPHEMERAL = { lo: 32768, hi: 60999 };
const SUM = /^rank (\d+)\/(\d+) local_rank (\d+) node (\S+) master (\S+):(\d+): all_reduce sum (\d+) \(want (\d+)\)$/gm;

before(() => {
  startCluster(); // errors surface in requireSlurm, in the multi-node test only
});
after(() => stopCluster());

interface Up {
  r: RunResult;
  run: string;
  /** A unique environment entry every process of the run carries. */
  tag: string;
}

async function up(t: TestContext, env: NodeJS.ProcessEnv = {}): Promise<Up | undefined> {
  if (!requireNeeds(t, NEED.python3, NEED.torch)) return undefined;
  if (!requireNetns(t)) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'berth-recipe-torch-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const run = join(dir, 'run');
  const tag = `BERTH_TORCH_TEST=${randomUUID()}`;
  const [k, v] = tag.split('=') as [string, string];
  const r = await berth(['up', join(RECIPE, 'stack.yaml'), '--run-dir', run], {
    netns: { ephemeral: `${EPHEMERAL.lo} ${EPHEMERAL.hi}` },
    env: { BERTH_STATE_DIR: join(dir, 'state'), [k]: v, ...env },
    timeoutMs: 120_000,
  });
  return { r, run, tag };
}

/** Every file under dir whose name matches, read (the ranks' logs, wherever berth put them). */
function readAll(dir: string, name: RegExp): string {
  if (!existsSync(dir)) return '';
  let out = '';
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) out += readAll(join(dir, e.name), name);
    else if (e.isFile() && name.test(e.name)) out += readFileSync(join(dir, e.name), 'utf8');
  }
  return out;
}

/** The ranks' sum lines, one per rank (a rank's line may be in berth's output and in its log). */
function sums(text: string): Map<number, RegExpExecArray> {
  const byRank = new Map<number, RegExpExecArray>();
  for (const m of text.matchAll(SUM)) byRank.set(Number(m[1]), m);
  return byRank;
}

test('torch.distributed, 3 gloo ranks on one host: all_reduce sums to 6; MASTER_PORT is one leased port outside the ephemeral range', { timeout: 120_000 }, async (t) => {
  const u = await up(t);
  if (!u) return;
  assert.equal(u.r.code, 0, u.r.stderr);
  const byRank = sums(u.r.stdout + u.r.stderr + readAll(join(u.run, 'logs'), /^trainer-\d+\.out$/));
  assert.deepEqual([...byRank.keys()].sort(), [0, 1, 2], u.r.stdout + u.r.stderr);
  const ports = new Set([...byRank.values()].map((m) => Number(m[6])));
  assert.equal(ports.size, 1, 'every rank was given the same MASTER_PORT');
  const port = [...ports][0]!;
  for (const m of byRank.values()) {
    assert.deepEqual([m[2], m[3], m[5], m[7], m[8]], ['3', m[1], '127.0.0.1', '6', '6'], m[0]);
  }
  assert.ok(port < EPHEMERAL.lo || port > EPHEMERAL.hi, `MASTER_PORT ${port} is inside the ephemeral range ${EPHEMERAL.lo}-${EPHEMERAL.hi}`);
  // berth leased it: the endpoints document lists the job's shared port.
  const doc = JSON.parse(readFileSync(join(u.run, 'endpoints.json'), 'utf8')) as { shared?: Record<string, { host: string; ports: Record<string, unknown> }> };
  assert.deepEqual(doc.shared?.trainer, { host: '127.0.0.1', ports: { master: port } }, JSON.stringify(doc));
  assert.ok(!readdirSync(RECIPE).includes('__pycache__'), 'train.py wrote no bytecode into the recipe');
});

test('torch.distributed: rank 2 exits 3 before init: berth exits 3 naming trainer/2, the waiting ranks are stopped', { timeout: 120_000 }, async (t) => {
  const u = await up(t, { FAIL_RANK: '2' });
  if (!u) return;
  assert.equal(u.r.code, 3, u.r.stderr);
  assert.match(u.r.stderr, /trainer\/2 failed: rank 2 of 3 exited with status 3/);
  assert.match(u.r.stderr, /failing on purpose before init_process_group/, 'the failing rank\'s stderr tail');
  assert.doesNotMatch(u.r.stdout + u.r.stderr, /all_reduce sum/);
  // Ranks 0 and 1 were blocked in init_process_group waiting for rank 2: none may outlive berth.
  // Ranks 0 and 1 were waiting in init_process_group (rank 2 failed once rank 0 listened): TERM.
  const events = readFileSync(join(u.run, 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { service: string; replica: number; state: string; signal?: string });
  for (const k of [0, 1]) {
    assert.ok(events.some((e) => e.service === 'trainer' && e.replica === k && e.state === 'exited' && e.signal === 'SIGTERM'), `trainer/${k} stopped by TERM: ${JSON.stringify(events.filter((e) => e.replica === k))}`);
  }
  // (berth's watchdog, which carries the run's environment too, ends on its own after berth.)
  const left = pidsWithEnv(u.tag).map((p) => `${p} ${cmdline(p)}`).filter((c) => c.includes('train.py'));
  assert.deepEqual(left, [], 'ranks left running after berth exited');
});

test('torch.distributed across the 3 nodes of the test Slurm cluster: one rank per node, exit 0', { timeout: 180_000 }, async (t) => {
  if (!requireNeeds(t, NEED.python3, NEED.torch)) return;
  if (!requireSlurm(t)) return;
  const r = await sbatch(`"${process.execPath}" "${BERTH}" up "${join(RECIPE, 'stack-nodes.yaml')}" --run-dir "$PWD/run"`, {
    args: ['-N3'],
    env: { BERTH_STATE_DIR: tempStateDir() },
    timeoutMs: 150_000,
  });
  assert.equal(r.code, 0, describeJob(r));
  const byRank = sums(r.out + r.err + readAll(join(r.dir, 'run'), /^trainer-\d+\.out$/));
  assert.deepEqual([...byRank.keys()].sort(), [0, 1, 2], describeJob(r));
  const nodes = new Set<string>();
  const ports = new Set<string>();
  for (const m of byRank.values()) {
    assert.deepEqual([m[2], m[3], m[7], m[8]], ['3', '0', '6', '6'], m[0]);
    nodes.add(m[4]!);
    ports.add(`${m[5]}:${m[6]}`);
  }
  // Rank r on node n(r+1); every rank was sent to one rendezvous address (the first node's).
  assert.deepEqual([0, 1, 2].map((k) => byRank.get(k)![4]), ['n1', 'n2', 'n3']);
  assert.equal(ports.size, 1, [...ports].join(' '));
  // Leased by n1's agent, where rank 0 runs, at n1's address (127.0.0.1: the emulated nodes' NodeAddr).
  const n1 = JSON.parse(readFileSync(join(r.dir, 'run', 'nodes', 'n1', 'endpoints.json'), 'utf8')) as { shared?: Record<string, unknown> };
  assert.deepEqual(n1.shared?.trainer, { host: '127.0.0.1', ports: { master: Number(byRank.get(0)![6]) } }, JSON.stringify(n1));
  assert.equal([...ports][0], `127.0.0.1:${byRank.get(0)![6]}`);
});
