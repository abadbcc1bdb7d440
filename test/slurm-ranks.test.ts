/**
 * A job of many ranks across the nodes of the test Slurm cluster (three emulated nodes n1..n3
 * on this host, scripts/slurm/start.sh): `job: true` with `nodes: all` and `replicas: 2`, one
 * shared master port leased on the first node, global ranks. The job ends the stack when
 * every rank on every node has exited: 0 if all did 0, else the first failing rank's status,
 * named with its node, every other node stopped. In CI these run; elsewhere they skip loudly
 * unless root.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { BERTH, tempStateDir } from './helpers/cli.js';
import { waitGone } from './helpers/procs.js';
import { describeJob, requireSlurm, sbatch, startCluster, stopCluster } from './helpers/slurm.js';

const B = `"${process.execPath}" "${BERTH}"`;
const STACK = resolve('test/fixtures/slurm/rank-job-stack.yaml');

before(() => {
  startCluster(); // errors surface in requireSlurm, per test
});
after(() => stopCluster());

const read = (f: string) => readFileSync(f, 'utf8');
const nodeFile = (dir: string, n: string) => JSON.parse(read(`${dir}/run/nodes/${n}.json`)) as { state: string; exitCode?: number; shared?: Record<string, { host: string; ports: { ports: number[] }[] }>; replicas: { replica: number; state: string; code?: number | null }[] };
const tag = () => `nodes-${process.pid}-${Math.random().toString(36).slice(2)}`;

test('a job of 6 ranks on 3 nodes: global ranks, one master port for all, every node done, exit 0', async (t) => {
  if (!requireSlurm(t)) return;
  const v = tag();
  const r = await sbatch(`${B} up "${STACK}" --run-dir "$PWD/run"`, { args: ['-N3'], env: { BERTH_STATE_DIR: tempStateDir(), BERTH_TEST_TAG: v }, timeoutMs: 60_000 });
  assert.equal(r.code, 0, describeJob(r));
  assert.match(r.err, /berth: job trainer exited with status 0/, describeJob(r));
  const n1 = nodeFile(r.dir, 'n1');
  const master = n1.shared!.trainer!.ports[0]!.ports[0]!;
  const lines: string[] = [];
  for (const [i, n] of ['n1', 'n2', 'n3'].entries()) {
    const f = nodeFile(r.dir, n);
    assert.equal(f.state, 'done', `${n}: ${JSON.stringify(f)}`);
    assert.deepEqual(f.replicas.map((x) => [x.state, x.code]), [['exited', 0], ['exited', 0]], n);
    for (const local of [0, 1]) {
      const log = read(`${r.dir}/run/nodes/${n}/logs/trainer-${local}.out`);
      const rank = i * 2 + local;
      // Rank 0's node leased the master port; every rank gets it, at an address the other nodes reach.
      assert.match(log, new RegExp(`^rank ${rank}/6 local ${local} node_rank ${i} on ${n} master 127\\.0\\.0\\.1:${master}\\n`), log);
      lines.push(log);
    }
  }
  assert.match(lines[0]!, /rank 0 saw ranks \[0, 1, 2, 3, 4, 5\]/);
  for (const n of ['n2', 'n3']) assert.equal(nodeFile(r.dir, n).shared, undefined, `${n} leased no master port of its own`);
  // The coordinator's endpoints.json: every rank of every node, exited.
  const doc = JSON.parse(read(`${r.dir}/run/endpoints.json`)) as { replicas: { service: string; node?: string; replica: number; state: string }[] };
  assert.deepEqual(doc.replicas.map((x) => `${x.service}/${x.replica}@${x.node} ${x.state}`).sort(), ['n1', 'n2', 'n3'].flatMap((n) => [0, 1].map((i) => `trainer/${i}@${n} exited`)).sort());
  // …and the master port, where every node reaches it (the python client's Stack.shared reads this).
  assert.deepEqual((doc as unknown as { shared: unknown }).shared, { trainer: { host: '127.0.0.1', ports: { master } } });
  assert.deepEqual((await waitGone(`BERTH_TEST_TAG=${v}`, 5_000)).left, []);
  t.diagnostic(`job ${r.seconds.toFixed(1)}s`);
});

test('rank 3 (second node) exits 3: the stack exits 3 naming the rank and node; every other node stopped, nothing left running', async (t) => {
  if (!requireSlurm(t)) return;
  const v = tag();
  const r = await sbatch(`${B} up "${STACK}" --run-dir "$PWD/run"`, { args: ['-N3'], env: { BERTH_STATE_DIR: tempStateDir(), BERTH_TEST_TAG: v, FAIL_RANK: '3' }, timeoutMs: 60_000 });
  assert.equal(r.code, 3, describeJob(r));
  assert.match(r.err, /berth: trainer\/1 failed: on node n2: rank 3 of 6 exited with status 3; every other rank, on every node, was stopped/, describeJob(r));
  assert.match(r.err, /last lines of trainer\/1's stderr:\n\s+rank 3 failing/, describeJob(r));
  const n2 = nodeFile(r.dir, 'n2');
  assert.equal(n2.state, 'failed');
  assert.deepEqual(n2.replicas.map((x) => x.code), [143, 3], 'rank 2 was stopped (TERM), rank 3 failed');
  for (const n of ['n1', 'n3']) {
    const f = nodeFile(r.dir, n);
    assert.equal(f.state, 'stopped', `${n}: ${JSON.stringify(f)}`);
    for (const x of f.replicas) assert.equal(x.state, 'exited', `${n} ${JSON.stringify(x)}`);
  }
  assert.deepEqual((await waitGone(`BERTH_TEST_TAG=${v}`, 5_000)).left, []);
  t.diagnostic(`job ${r.seconds.toFixed(1)}s`);
});
