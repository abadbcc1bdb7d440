/**
 * A job of ranks on the three nodes of the test Slurm cluster (scripts/slurm/start.sh), one
 * rank per node, restarted as a group (restart: on-failure): the rank on node n2 fails in
 * generation 0 (exit 3, or SIGKILL); every node stops its rank and starts generation 1, with a
 * master port of its own, and the job completes (exit 0). Every generation's node files and
 * logs are kept side by side. Then real torch ranks (gloo, Debian's python3-torch) beside a
 * service on every node that is not part of the job: it keeps running while the rank on n2 is
 * killed mid-collective; and a node's agent killed, which starts every node again. In CI these
 * run; elsewhere they skip loudly unless root.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { BERTH, tempStateDir } from './helpers/cli.js';
import { waitGone } from './helpers/procs.js';
import { NEED, requireNeeds } from './helpers/require.js';
import { describeJob, requireSlurm, sbatch, startCluster, stopCluster } from './helpers/slurm.js';

const B = `"${process.execPath}" "${BERTH}"`;
const STACK = resolve('test/fixtures/slurm/rank-job-restart.yaml');
const TORCH = resolve('test/fixtures/slurm/torch-job-restart.yaml');

before(() => {
  startCluster();
});
after(() => stopCluster());

const read = (f: string) => readFileSync(f, 'utf8');
type Node = { state: string; generation?: number; gone?: number; rankFailure?: { status: number; generation?: number }; shared?: Record<string, { ports: { ports: number[] }[] }>; replicas: { state: string; code?: number | null; generation?: number }[] };
const nodeFile = (f: string) => JSON.parse(read(f)) as Node;
const tag = () => `gens-${process.pid}-${Math.random().toString(36).slice(2)}`;

for (const how of ['exit 3', 'SIGKILL'] as const) {
  test(`the rank on n2 fails in generation 0 (${how}): all three nodes restart as generation 1, a fresh master port, exit 0`, async (t) => {
    if (!requireSlurm(t)) return;
    const v = tag();
    const env = { BERTH_STATE_DIR: tempStateDir(), BERTH_TEST_TAG: v, FAIL_RANK: '1', FAIL_GENERATION: '0', ...(how === 'SIGKILL' ? { FAIL_SIGNAL: 'KILL' } : {}) };
    const r = await sbatch(`${B} up "${STACK}" --run-dir "$PWD/run"`, { args: ['-N3'], env, timeoutMs: 120_000 });
    assert.equal(r.code, 0, describeJob(r));
    const status = how === 'SIGKILL' ? 137 : 3;
    assert.match(r.err, new RegExp(`berth: trainer: generation 0 ends: rank 1 on node n2 exited with status ${status}; stopping every rank on every node, then generation 1 of 3`), describeJob(r));
    assert.match(r.err, /berth: job trainer exited with status 0/, describeJob(r));
    const dir = `${r.dir}/run/nodes`;
    // Generation 0's node files are kept; the current ones are generation 1's.
    const g0 = ['n1', 'n2', 'n3'].map((n) => nodeFile(`${dir}/${n}.g0.json`));
    const g1 = ['n1', 'n2', 'n3'].map((n) => nodeFile(`${dir}/${n}.json`));
    // Its generation ended in place: the agents stayed, each node's g0 file names what ended it.
    assert.equal(g0[1]!.rankFailure?.status, status, JSON.stringify(g0[1]));
    assert.equal(g0[1]!.gone, 0);
    for (const f of g1) {
      assert.equal(f.generation, 1);
      assert.equal(f.state, 'done', JSON.stringify(f));
      assert.deepEqual(f.replicas.map((x) => [x.state, x.code, x.generation]), [['exited', 0, 1]]);
    }
    const m0 = g0[0]!.shared!.trainer!.ports[0]!.ports[0]!;
    const m1 = g1[0]!.shared!.trainer!.ports[0]!.ports[0]!;
    assert.notEqual(m1, m0, 'every generation has a master port of its own');
    // Logs of both generations side by side, on every node.
    for (const [i, n] of ['n1', 'n2', 'n3'].entries()) {
      assert.match(read(`${dir}/${n}/logs/trainer-0.g0.out`), new RegExp(`rank ${i}/3 .* master 127\\.0\\.0\\.1:${m0}\\nrank ${i} generation 0\\n`));
      assert.match(read(`${dir}/${n}/logs/trainer-0.g1.out`), new RegExp(`rank ${i}/3 .* master 127\\.0\\.0\\.1:${m1}\\nrank ${i} generation 1\\n`));
    }
    assert.match(read(`${dir}/n1/logs/trainer-0.g1.out`), /rank 0 saw ranks \[0, 1, 2\]/);
    assert.ok(existsSync(`${dir}/n2/logs/trainer-0.g0.err`));
    // The coordinator's endpoints.json: every node's rank, of generation 1, exited.
    const doc = JSON.parse(read(`${r.dir}/run/endpoints.json`)) as { generation?: number; replicas: { node?: string; state: string; generation?: number }[] };
    assert.equal(doc.generation, 1);
    assert.deepEqual(doc.replicas.map((x) => `${x.node} ${x.state} g${x.generation}`).sort(), ['n1 exited g1', 'n2 exited g1', 'n3 exited g1']);
    assert.deepEqual((await waitGone(`BERTH_TEST_TAG=${v}`, 5_000)).left, []);
    t.diagnostic(`job ${r.seconds.toFixed(1)}s`);
  });
}

test('a rank that fails in every generation: 1 + restart_limit generations, then its status, nothing left', async (t) => {
  if (!requireSlurm(t)) return;
  const v = tag();
  const r = await sbatch(`${B} up "${STACK}" --run-dir "$PWD/run"`, { args: ['-N3'], env: { BERTH_STATE_DIR: tempStateDir(), BERTH_TEST_TAG: v, FAIL_RANK: '2' }, timeoutMs: 150_000 });
  assert.equal(r.code, 3, describeJob(r));
  assert.equal([...r.err.matchAll(/generation \d ends: rank 2 on node n3/g)].length, 2, describeJob(r));
  assert.match(r.err, /trainer\/0 failed: on node n3: rank 2 of 3 exited with status 3/, describeJob(r));
  assert.deepEqual((await waitGone(`BERTH_TEST_TAG=${v}`, 5_000)).left, []);
});

interface Ev {
  service: string;
  replica: number;
  state: string;
  pid?: number;
  generation?: number;
}
const nodeEvents = (dir: string, node: string): Ev[] => read(`${dir}/${node}/events.jsonl`).trim().split('\n').map((l) => JSON.parse(l) as Ev);

/** berth up of the torch stack in the background; once rank 1 (n2) stalls in generation 0, `kill` (bash, $stalled: its pid) runs. */
function stalledScript(kill: string): string {
  return `${B} up "${TORCH}" --run-dir "$PWD/run" 2> up.err &
pid=$!
for i in $(seq 1200); do f=$(find run/nodes/n2 -name stalled.pid 2>/dev/null | head -1); [ -n "$f" ] && [ -s "$f" ] && break; sleep 0.05; done
stalled=$(cat "$f")
${kill}
wait $pid
echo "up exit $?"`;
}

function assertTorchDone(dir: string, all: string): { m0: number; m1: number } {
  const g0 = ['n1', 'n2', 'n3'].map((n) => nodeFile(`${dir}/${n}.g0.json`));
  const g1 = ['n1', 'n2', 'n3'].map((n) => nodeFile(`${dir}/${n}.json`));
  for (const f of g1) assert.equal(f.generation, 1, all);
  const m0 = g0[0]!.shared!.trainer!.ports[0]!.ports[0]!;
  const m1 = g1[0]!.shared!.trainer!.ports[0]!.ports[0]!;
  assert.notEqual(m1, m0, 'every generation has a master port of its own');
  for (const [i, n] of ['n1', 'n2', 'n3'].entries()) {
    assert.match(read(`${dir}/${n}/logs/trainer-0.g0.err`), new RegExp(`^rank ${i} generation 0 master 127\\.0\\.0\\.1:${m0} `, 'm'), all);
    assert.match(read(`${dir}/${n}/logs/trainer-0.g1.err`), new RegExp(`^rank ${i} generation 1 master 127\\.0\\.0\\.1:${m1} `, 'm'), all);
    assert.match(read(`${dir}/${n}/logs/trainer-0.g1.out`), new RegExp(`^rank ${i}/3 .*: all_reduce sum 6 \\(want 6\\)$`, 'm'), all);
  }
  return { m0, m1 };
}

test('torch ranks on 3 nodes, kill -9 of the rank on n2 mid-collective: every node restarts its rank as generation 1 in place, the sidecars keep running, exit 0', async (t) => {
  if (!requireSlurm(t) || !requireNeeds(t, NEED.python3, NEED.torch)) return;
  const v = tag();
  const r = await sbatch(stalledScript('kill -9 $stalled'), { args: ['-N3'], env: { BERTH_STATE_DIR: tempStateDir(), BERTH_TEST_TAG: v, STALL_RANK: '1', FAIL_GENERATION: '0' }, timeoutMs: 150_000 });
  const err = read(`${r.dir}/up.err`);
  const all = `${describeJob(r)}\n--- up.err\n${err}`;
  assert.match(r.out, /up exit 0/, all);
  assert.match(err, /berth: trainer: generation 0 ends: rank 1 on node n2 exited with status 137; stopping every rank on every node, then generation 1 of 3/, all);
  assert.match(err, /berth: trainer: generation 0 is gone on every node; starting generation 1/, all);
  assert.doesNotMatch(err, /with new agents/, all);
  const dir = `${r.dir}/run/nodes`;
  assertTorchDone(dir, all);
  for (const n of ['n1', 'n2', 'n3']) {
    const ev = nodeEvents(dir, n);
    // The sidecar started once and was never stopped for the job's new generation; the rank twice.
    const sidecarStarts = ev.filter((e) => e.service === 'sidecar' && e.state === 'starting');
    assert.equal(sidecarStarts.length, 1, `${n}: ${JSON.stringify(ev.filter((e) => e.service === 'sidecar'))}`);
    const stopping = ev.findIndex((e) => e.service === 'sidecar' && e.state === 'stopping');
    const lastTrainer = ev.map((e) => e.service === 'trainer' && e.state === 'exited' && e.generation === 1).lastIndexOf(true);
    assert.ok(stopping > lastTrainer, `${n}: the sidecar stops only once generation 1 is done`);
    assert.equal(ev.filter((e) => e.service === 'trainer' && e.state === 'starting').length, 2, n);
    assert.equal([...read(`${dir}/${n}/logs/sidecar-0.out`).matchAll(/listening on/g)].length, 1, n);
  }
  assert.deepEqual((await waitGone(`BERTH_TEST_TAG=${v}`, 5_000)).left, []);
  t.diagnostic(`job ${r.seconds.toFixed(1)}s`);
});

test('torch ranks on 3 nodes, kill -9 of the agent on n2: every node starts again as generation 1 (new agents), exit 0, nothing left', async (t) => {
  if (!requireSlurm(t) || !requireNeeds(t, NEED.python3, NEED.torch)) return;
  const v = tag();
  const agent = `$(/usr/bin/python3 -c 'import json; print(json.load(open("run/nodes/n2.json"))["pid"])')`;
  const r = await sbatch(stalledScript(`kill -9 ${agent}`), { args: ['-N3'], env: { BERTH_STATE_DIR: tempStateDir(), BERTH_TEST_TAG: v, STALL_RANK: '1', FAIL_GENERATION: '0' }, timeoutMs: 150_000 });
  const err = read(`${r.dir}/up.err`);
  const all = `${describeJob(r)}\n--- up.err\n${err}`;
  assert.match(r.out, /up exit 0/, all);
  assert.match(err, /berth: trainer: generation 0 ends: the agent on node n2 is gone; stopping every node's agents, then generation 1 of 3 with new agents/, all);
  assertTorchDone(`${r.dir}/run/nodes`, all);
  assert.deepEqual((await waitGone(`BERTH_TEST_TAG=${v}`, 5_000)).left, []);
  t.diagnostic(`job ${r.seconds.toFixed(1)}s`);
});

test('SIGTERM to berth up while a generation ends on every node: exit 143, generation 1 never starts, nothing left on any node', async (t) => {
  if (!requireSlurm(t) || !requireNeeds(t, NEED.python3, NEED.torch)) return;
  const v = tag();
  // Rank 0 ignores SIGTERM: its node's end of generation 0 lasts stop_grace, the window for berth up's SIGTERM.
  const script = `${B} up "${TORCH}" --run-dir "$PWD/run" 2> up.err &
pid=$!
for i in $(seq 1200); do grep -q "generation 0 ends" up.err && break; sleep 0.05; done
kill -TERM $pid
wait $pid
echo "up exit $?"`;
  const r = await sbatch(script, { args: ['-N3'], env: { BERTH_STATE_DIR: tempStateDir(), BERTH_TEST_TAG: v, FAIL_RANK: '1', FAIL_GENERATION: '0', IGNORE_TERM_RANK: '0' }, timeoutMs: 150_000 });
  const err = read(`${r.dir}/up.err`);
  const all = `${describeJob(r)}\n--- up.err\n${err}`;
  assert.match(r.out, /up exit 143/, all);
  assert.match(err, /generation 0 ends: rank 1 on node n2 exited with status 3/, all);
  assert.doesNotMatch(err, /starting generation 1/, all);
  for (const n of ['n1', 'n2', 'n3']) assert.ok(!existsSync(`${r.dir}/run/nodes/${n}/logs/trainer-0.g1.out`), `${n} started no generation 1`);
  assert.deepEqual((await waitGone(`BERTH_TEST_TAG=${v}`, 5_000)).left, []);
});
