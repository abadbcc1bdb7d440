/**
 * A job of ranks on the three nodes of the test Slurm cluster (scripts/slurm/start.sh), one
 * rank per node, restarted as a group (restart: on-failure): the rank on node n2 fails in
 * generation 0 (exit 3, or SIGKILL); every node stops its rank and starts generation 1, with a
 * master port of its own, and the job completes (exit 0). Every generation's node files and
 * logs are kept side by side. In CI these run; elsewhere they skip loudly unless root.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { BERTH, tempStateDir } from './helpers/cli.js';
import { waitGone } from './helpers/procs.js';
import { describeJob, requireSlurm, sbatch, startCluster, stopCluster } from './helpers/slurm.js';

const B = `"${process.execPath}" "${BERTH}"`;
const STACK = resolve('test/fixtures/slurm/rank-job-restart.yaml');

before(() => {
  startCluster();
});
after(() => stopCluster());

const read = (f: string) => readFileSync(f, 'utf8');
type Node = { state: string; generation?: number; shared?: Record<string, { ports: { ports: number[] }[] }>; replicas: { state: string; code?: number | null; generation?: number }[] };
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
    assert.equal(g0[1]!.state, 'failed');
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
    const doc = JSON.parse(read(`${r.dir}/run/endpoints.json`)) as { replicas: { node?: string; state: string; generation?: number }[] };
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
