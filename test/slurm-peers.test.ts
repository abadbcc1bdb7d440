/**
 * Peers across nodes on the test Slurm cluster (three emulated nodes n1..n3 on this host,
 * scripts/slurm/start.sh): a `nodes:` service that names its own service waits until every
 * node has leased its replicas, then lists every node's replicas (node order) in its
 * placeholders and templates. First a checker job of 6 ranks, then a real 3-member etcd
 * cluster (Debian's etcd) with one member per node. In CI these run; elsewhere they skip
 * loudly unless root.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { BERTH, tempStateDir } from './helpers/cli.js';
import { waitGone } from './helpers/procs.js';
import { describeJob, requireSlurm, sbatch, startCluster, stopCluster } from './helpers/slurm.js';
import { NEED, requireNeeds } from './helpers/require.js';

const B = `"${process.execPath}" "${BERTH}"`;

before(() => {
  startCluster(); // errors surface in requireSlurm, per test
});
after(() => stopCluster());

const read = (f: string) => readFileSync(f, 'utf8');
const tag = () => `peers-${process.pid}-${Math.random().toString(36).slice(2)}`;
const nodeFile = (dir: string, n: string) => JSON.parse(read(`${dir}/run/nodes/${n}.json`)) as { state: string; peers?: Record<string, { replica: number; port: number }[]> };

test('a nodes: service naming its own service: every replica on 3 nodes sees all 6 peers, in node order, distinct, itself at its rank', async (t) => {
  if (!requireSlurm(t)) return;
  const v = tag();
  const r = await sbatch(`${B} up "${resolve('test/fixtures/slurm/peers-stack.yaml')}" --run-dir "$PWD/run"`, { args: ['-N3'], env: { BERTH_STATE_DIR: tempStateDir(), BERTH_TEST_TAG: v }, timeoutMs: 60_000 });
  assert.equal(r.code, 0, describeJob(r));
  // Every node published its leased replicas before any started.
  const ports = ['n1', 'n2', 'n3'].flatMap((n) => nodeFile(r.dir, n).peers!.peer!.map((e) => `127.0.0.1:${e.port}`));
  assert.equal(ports.length, 6);
  const lists = new Set<string>();
  for (const [i, n] of ['n1', 'n2', 'n3'].entries()) {
    for (const local of [0, 1]) {
      const log = read(`${r.dir}/run/nodes/${n}/logs/peer-${local}.out`);
      const rank = i * 2 + local;
      const m = new RegExp(`^rank ${rank}/6 on ${n} port (\\d+) peers (\\S+) q `).exec(log);
      assert.ok(m, log);
      assert.match(log, new RegExp(`rank ${rank} ok: 6 distinct peers`), log);
      lists.add(m[2]!);
    }
  }
  // The same list everywhere: node order, then replica order; the first node's job sees it too.
  assert.deepEqual([...lists], [ports.join(',')]);
  assert.match(r.out, new RegExp(`^job sees ${ports.join(',')}$`, 'm'), describeJob(r));
  assert.deepEqual((await waitGone(`BERTH_TEST_TAG=${v}`, 5_000)).left, []);
  t.diagnostic(`job ${r.seconds.toFixed(1)}s`);
});

test('etcd across nodes (examples/recipes/etcd-cluster/stack-nodes.yaml): one member per node, --initial-cluster from every node\'s peer port, all 3 healthy', async (t) => {
  if (!requireNeeds(t, NEED.etcd, NEED.etcdctl)) return;
  if (!requireSlurm(t)) return;
  const v = tag();
  const r = await sbatch(`${B} up "${resolve('examples/recipes/etcd-cluster/stack-nodes.yaml')}" --run-dir "$PWD/run"`, { args: ['-N3'], env: { BERTH_STATE_DIR: tempStateDir(), BERTH_TEST_TAG: v }, timeoutMs: 120_000 });
  assert.equal(r.code, 0, describeJob(r));
  assert.match(r.err, /berth: job check exited with status 0/, describeJob(r));
  const check = read(`${r.dir}/run/logs/check-0.err`) + read(`${r.dir}/run/logs/check-0.out`);
  const peers = ['n1', 'n2', 'n3'].map((n) => nodeFile(r.dir, n).peers!.etcd![0]!);
  // etcdctl endpoint health: every member, at the client port its node leased.
  for (const p of peers) assert.match(check, new RegExp(`127\\.0\\.0\\.1:${p.port} is healthy`), check);
  // Each member's config lists the whole cluster, itself included with its own advertise URL.
  for (const [i, n] of ['n1', 'n2', 'n3'].entries()) {
    const conf = read(`${r.dir}/run/nodes/${n}/data/etcd-0/etcd-nodes.yaml`);
    assert.match(conf, new RegExp(`^name: m${i}$`, 'm'), conf);
    assert.match(conf, /^initial-cluster: m0=http:\/\/127\.0\.0\.1:\d+,m1=http:\/\/127\.0\.0\.1:\d+,m2=http:\/\/127\.0\.0\.1:\d+$/m, conf);
    const own = new RegExp(`m${i}=(http://[^,\\n]+)`).exec(conf)![1]!;
    assert.match(conf, new RegExp(`^initial-advertise-peer-urls: ${own}$`, 'm'), conf);
  }
  assert.deepEqual((await waitGone(`BERTH_TEST_TAG=${v}`, 5_000)).left, []);
  t.diagnostic(`job ${r.seconds.toFixed(1)}s`);
});
