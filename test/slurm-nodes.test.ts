/**
 * Multi-node stacks on the test Slurm cluster (three emulated nodes n1..n3 on this host,
 * scripts/slurm/start.sh): every node's replicas in the coordinator's run directory and
 * --json, --follow with node prefixes, SIGTERM stopping every node in order, and `nodes:`
 * services that depend on a service of the first node (nodes: others). In CI these run;
 * elsewhere they skip loudly unless root.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { EndpointRecord } from '../src/stack/record/endpoints.js';
import { BERTH, tempStateDir } from './helpers/cli.js';
import { waitGone } from './helpers/procs.js';
import { describeJob, requireSlurm, sbatch, startCluster, stopCluster } from './helpers/slurm.js';

const B = `"${process.execPath}" "${BERTH}"`;
const STACKS = resolve('test/fixtures/slurm');

before(() => {
  startCluster(); // errors surface in requireSlurm, per test
});
after(() => stopCluster());

type Rec = EndpointRecord;
interface Ev {
  t: string;
  service: string;
  replica: number;
  node?: string;
  state: string;
}
const read = (f: string) => readFileSync(f, 'utf8');
const events = (f: string): Ev[] => read(f).trim().split('\n').map((l) => JSON.parse(l) as Ev);
const tag = () => `BERTH_TEST_TAG=nodes-${process.pid}-${Math.random().toString(36).slice(2)}`;

test('every node in one place: endpoints.json, --json and the status view list each node\'s replicas; --follow prefixes the node; SIGTERM stops every node in order (143)', async (t) => {
  if (!requireSlurm(t)) return;
  const [k, v] = tag().split('=') as [string, string];
  const r = await sbatch(
    `${B} up "${STACKS}/nodes-replicas-stack.yaml" --run-dir "$PWD/run" --json --follow > up.out 2> up.err &
pid=$!
for i in $(seq 600); do grep -q "stack ready" up.err && break; sleep 0.05; done
cp run/endpoints.json ready-endpoints.json
kill -TERM $pid
wait $pid
echo "up exit $?"`,
    { args: ['-N3'], env: { BERTH_STATE_DIR: tempStateDir(), [k]: v }, timeoutMs: 60_000 },
  );
  assert.equal(r.code, 0, describeJob(r));
  const out = read(`${r.dir}/up.out`);
  const err = read(`${r.dir}/up.err`);
  const all = `${describeJob(r)}\n--- up.err\n${err}`;
  assert.match(r.out, /up exit 143/, all);
  // Ready: 2 engines on each of 3 nodes and the proxy, counted together.
  assert.match(err, /stack ready after [\d.]+s: 7 replicas of 2 services/, all);
  for (const n of ['n1', 'n2', 'n3']) for (const i of [0, 1]) assert.match(err, new RegExp(`engine/${i}@${n} +http://127\\.0\\.0\\.1:\\d+`), all);
  const doc = JSON.parse(read(`${r.dir}/ready-endpoints.json`)) as { replicas: Rec[] };
  const json = JSON.parse(out.trim().split('\n')[0]!) as { replicas: Rec[] };
  for (const d of [doc, json]) {
    const engines = d.replicas.filter((x) => x.service === 'engine');
    assert.equal(engines.length, 6, JSON.stringify(d));
    // In node order, whichever node reported first.
    assert.deepEqual(engines.map((e) => `${e.node}/${e.replica}`), ['n1/0', 'n1/1', 'n2/0', 'n2/1', 'n3/0', 'n3/1']);
    for (const e of engines) {
      assert.equal(e.state, 'ready');
      // A reachable address (the emulated nodes' NodeAddr), never the wildcard they listen on.
      assert.equal(e.host, '127.0.0.1');
      assert.equal(e.url, `http://127.0.0.1:${e.port}`);
    }
    assert.equal(new Set(engines.map((e) => e.port)).size, 6, 'one port space, no two engines share a port');
    assert.deepEqual(d.replicas.filter((x) => x.service === 'proxy').map((x) => [x.node, x.state]), [[undefined, 'ready']]);
  }
  // The proxy reached every engine at the url listed.
  const proxyLog = read(`${r.dir}/run/logs/proxy-0.out`);
  for (const e of doc.replicas.filter((x) => x.service === 'engine')) assert.match(proxyLog, new RegExp(`reached ${e.url}: engine ${e.replica} on ${e.node}`), proxyLog);
  // --follow: the agents' services' output, each line prefixed with its node.
  for (const n of ['n1', 'n2', 'n3']) assert.match(err, new RegExp(`\\[${n}\\] engine/1 \\| engine 1 on ${n} listening on 0\\.0\\.0\\.0:\\d+`), all);
  // The status lines carry the node too.
  assert.match(err, /\d\d:\d\d:\d\d\.\d{3} engine\/0@n2 ready port \d+/, all);
  // SIGTERM: the proxy (depends on the engines) exited before any engine was asked to stop; then every node stopped.
  const local = events(`${r.dir}/run/events.jsonl`);
  const proxyExit = local.find((e) => e.service === 'proxy' && e.state === 'exited');
  assert.ok(proxyExit, 'proxy exited');
  for (const n of ['n1', 'n2', 'n3']) {
    const f = JSON.parse(read(`${r.dir}/run/nodes/${n}.json`)) as { state: string; replicas: Rec[] };
    assert.equal(f.state, 'stopped', `${n}: ${JSON.stringify(f)}`);
    assert.deepEqual(f.replicas.map((x) => x.state), ['exited', 'exited'], n);
    const evs = events(`${r.dir}/run/nodes/${n}/events.jsonl`);
    const stopping = evs.filter((e) => e.state === 'stopping');
    assert.equal(stopping.length, 2, `${n}: ${JSON.stringify(evs)}`);
    for (const s of stopping) assert.ok(s.t >= proxyExit.t, `${n} engine/${s.replica} stopping at ${s.t}, before the proxy exited at ${proxyExit.t}`);
    assert.match(read(`${r.dir}/run/nodes/${n}/logs/engine-0.out`), /stopping/);
  }
  // The coordinator's record ends with every node replica exited.
  const final = JSON.parse(read(`${r.dir}/run/endpoints.json`)) as { replicas: Rec[] };
  assert.deepEqual([...new Set(final.replicas.map((x) => x.state))], ['exited'], JSON.stringify(final));
  assert.equal(final.replicas.length, 7);
  // Nothing left running anywhere (all nodes are this host).
  const gone = await waitGone(`${k}=${v}`, 5_000);
  assert.deepEqual(gone.left, [], 'processes left running');
  t.diagnostic(`job ${r.seconds.toFixed(1)}s; ${/stack ready after ([\d.]+s)/.exec(err)?.[1]} to ready`);
  assert.deepEqual(readdirSync(`${r.dir}/run/nodes`).sort(), ['n1', 'n1.json', 'n2', 'n2.json', 'n3', 'n3.json']);
});

test('nodes: others waits for a service of the first node (a head): workers reach it at the first node\'s address; the driver reaches every worker', async (t) => {
  if (!requireSlurm(t)) return;
  const [k, v] = tag().split('=') as [string, string];
  const r = await sbatch(`${B} up "${STACKS}/nodes-head-stack.yaml" --run-dir "$PWD/run"`, { args: ['-N3'], env: { BERTH_STATE_DIR: tempStateDir(), [k]: v }, timeoutMs: 60_000 });
  assert.equal(r.code, 0, describeJob(r));
  const doc = JSON.parse(read(`${r.dir}/run/endpoints.json`)) as { replicas: Rec[] };
  const head = doc.replicas.find((x) => x.service === 'head')!;
  const workers = doc.replicas.filter((x) => x.service === 'worker');
  assert.deepEqual(workers.map((w) => w.node), ['n2', 'n3'], 'nodes: others: every node but the first');
  assert.deepEqual(readdirSync(`${r.dir}/run/nodes`).filter((f) => f.endsWith('.json')).sort(), ['n2.json', 'n3.json'], 'no agent on the first node');
  for (const n of ['n2', 'n3']) {
    const log = read(`${r.dir}/run/nodes/${n}/logs/worker-0.out`);
    // {head.url} on another node: the first node's address (NodeAddr 127.0.0.1 here), not 0.0.0.0.
    assert.match(log, new RegExp(`worker reached http://127\\.0\\.0\\.1:${head.port}: head 0 on n1`), log);
  }
  for (const w of workers) assert.match(r.out, new RegExp(`driver reached http://127\\.0\\.0\\.1:${w.port} worker 0 on ${w.node}`), describeJob(r));
  // The workers started only after the head was ready.
  const headReady = events(`${r.dir}/run/events.jsonl`).find((e) => e.service === 'head' && e.state === 'ready')!;
  for (const n of ['n2', 'n3']) {
    const started = events(`${r.dir}/run/nodes/${n}/events.jsonl`).find((e) => e.state === 'starting')!;
    assert.ok(started.t >= headReady.t, `${n}'s worker started at ${started.t}, before the head was ready at ${headReady.t}`);
  }
  // Teardown: the workers (depend on the head) stopped before the head.
  const headStopping = events(`${r.dir}/run/events.jsonl`).find((e) => e.service === 'head' && e.state === 'stopping')!;
  for (const n of ['n2', 'n3']) {
    const exited = events(`${r.dir}/run/nodes/${n}/events.jsonl`).find((e) => e.state === 'exited')!;
    assert.ok(exited.t <= headStopping.t, `${n}'s worker exited at ${exited.t}, after the head was asked to stop at ${headStopping.t}`);
  }
  const gone = await waitGone(`${k}=${v}`, 5_000);
  assert.deepEqual(gone.left, [], 'processes left running');
  t.diagnostic(`job ${r.seconds.toFixed(1)}s`);
});

// Issue 32 item 18: before, the other nodes got {scheduler.url} as http://… for a first-node
// service declared scheme: tcp (their stack does not have the service, so its scheme was lost).
test('a first-node service\'s scheme: reaches the other nodes ({scheduler.url} is tcp://… everywhere)', async (t) => {
  if (!requireSlurm(t)) return;
  const [k, v] = tag().split('=') as [string, string];
  const r = await sbatch(`${B} up "${STACKS}/nodes-head-scheme-stack.yaml" --run-dir "$PWD/run"`, { args: ['-N3'], env: { BERTH_STATE_DIR: tempStateDir(), [k]: v }, timeoutMs: 60_000 });
  assert.equal(r.code, 0, describeJob(r));
  const doc = JSON.parse(read(`${r.dir}/run/endpoints.json`)) as { replicas: Rec[] };
  const sched = doc.replicas.find((x) => x.service === 'scheduler')!;
  assert.equal(sched.url, `tcp://127.0.0.1:${sched.port}`);
  assert.match(r.out, new RegExp(`client was given tcp://127\\.0\\.0\\.1:${sched.port}`), describeJob(r));
  for (const n of ['n2', 'n3']) {
    const log = read(`${r.dir}/run/nodes/${n}/logs/worker-0.out`);
    assert.match(log, new RegExp(`^worker was given tcp://127\\.0\\.0\\.1:${sched.port}$`, 'm'), `${n}: ${log}`);
  }
  const gone = await waitGone(`${k}=${v}`, 5_000);
  assert.deepEqual(gone.left, [], 'processes left running');
});

test('the first node\'s head fails while the other nodes wait for it: exit 70 naming it, every node stopped, nothing left running', async (t) => {
  if (!requireSlurm(t)) return;
  const [k, v] = tag().split('=') as [string, string];
  const r = await sbatch(`${B} up "${STACKS}/nodes-head-fail-stack.yaml" --run-dir "$PWD/run"`, { args: ['-N3'], env: { BERTH_STATE_DIR: tempStateDir(), [k]: v }, timeoutMs: 60_000 });
  assert.equal(r.code, 70, describeJob(r));
  assert.match(r.err, /berth: head\/0 failed: the service exited with status 5 before it was ready/, describeJob(r));
  assert.match(r.err, /head: cannot start/);
  for (const n of ['n1', 'n2', 'n3']) {
    const f = JSON.parse(read(`${r.dir}/run/nodes/${n}.json`)) as { state: string; replicas: Rec[] };
    assert.equal(f.state, 'stopped', `${n}: ${JSON.stringify(f)}`);
    // A sidecar that ran was stopped (one whose node had not started it yet when the head
    // failed never runs: seen in CI); the workers never started.
    const sidecars = f.replicas.filter((x) => x.service === 'sidecar').map((x) => x.state);
    assert.ok(sidecars.length <= 1 && sidecars.every((st) => st === 'exited'), `${n}: sidecar ${JSON.stringify(sidecars)}`);
    for (const w of f.replicas.filter((x) => x.service === 'worker')) assert.notEqual(w.state, 'ready', `${n} worker ${w.state}`);
  }
  // An agent stopped while it still waited for the head never made its run directory: no events, no worker.
  const n2 = `${r.dir}/run/nodes/n2/events.jsonl`;
  assert.equal(existsSync(n2) ? events(n2).filter((e) => e.service === 'worker' && e.state === 'starting').length : 0, 0, 'no worker started');
  assert.deepEqual((await waitGone(`${k}=${v}`, 5_000)).left, [], 'processes left running');
  t.diagnostic(`job ${r.seconds.toFixed(1)}s`);
});

test('SIGTERM while the other nodes wait for the first node\'s head: 143, the waiting agents stop, nothing left running', async (t) => {
  if (!requireSlurm(t)) return;
  const [k, v] = tag().split('=') as [string, string];
  const r = await sbatch(
    `${B} up "${STACKS}/nodes-head-slow-stack.yaml" --run-dir "$PWD/run" 2> up.err &
pid=$!
for i in $(seq 600); do [ -f run/nodes/n2.json ] && [ -f run/nodes/n3.json ] && break; sleep 0.05; done
sleep 0.5
kill -TERM $pid
wait $pid
echo "up exit $?"`,
    { args: ['-N3'], env: { BERTH_STATE_DIR: tempStateDir(), [k]: v }, timeoutMs: 60_000 },
  );
  const err = read(`${r.dir}/up.err`);
  assert.match(r.out, /up exit 143/, `${describeJob(r)}\n--- up.err\n${err}`);
  for (const n of ['n2', 'n3']) {
    const f = JSON.parse(read(`${r.dir}/run/nodes/${n}.json`)) as { state: string; replicas?: Rec[] };
    assert.equal(f.state, 'stopped', `${n}: ${JSON.stringify(f)}`);
    for (const w of f.replicas ?? []) assert.notEqual(w.state, 'ready', `${n} worker ${w.state}`);
  }
  assert.ok(events(`${r.dir}/run/events.jsonl`).some((e) => e.service === 'head' && e.state === 'exited'), 'the head was stopped');
  assert.deepEqual((await waitGone(`${k}=${v}`, 5_000)).left, [], 'processes left running');
  t.diagnostic(`job ${r.seconds.toFixed(1)}s`);
});
