/**
 * The Ray cluster recipe (examples/recipes/ray-cluster), rendered only: Ray cannot be installed
 * on the test machines, so the recipe's stack runs with a stand-in `ray` first on PATH
 * (test/fixtures/fake-bin/ray) that refuses an argv Ray's docs would not accept with every port
 * set (a port flag missing, numbers repeating, the worker range outside a leased block, a bad
 * --address), records it, listens on those ports as Ray does, and lets the worker nodes
 * register with the head's GCS at --address. The whole cluster runs on the 3 nodes of the test
 * Slurm cluster (head on n1, workers on n2 and n3); the head alone also runs on one host.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { parse, stringify } from 'yaml';
import { BERTH, berth, tempStateDir } from './helpers/cli.js';
import { requireNetns } from './helpers/netns.js';
import { describeJob, requireSlurm, sbatch, startCluster, stopCluster } from './helpers/slurm.js';

const STACK = resolve('examples/recipes/ray-cluster/stack.yaml');
const FAKE_BIN = resolve('test/fixtures/fake-bin');

before(() => {
  startCluster(); // errors surface in requireSlurm, in the multi-node test only
});
after(() => stopCluster());

interface Node {
  /** Record file stem: SERVICE-NODE-REPLICA. */
  file: string;
  argv: string[];
  /** --flag → value. */
  flags: Map<string, string>;
  /** BERTH_PORT_* and BERTH_NODE* as berth gave them. */
  env: Map<string, string>;
}

function recorded(record: string): Node[] {
  return readdirSync(record)
    .filter((f) => f.endsWith('.argv'))
    .sort()
    .map((f) => {
      const file = f.slice(0, -'.argv'.length);
      const argv = readFileSync(join(record, f), 'utf8').trimEnd().split('\n');
      const flags = new Map(argv.filter((a) => a.includes('=')).map((a) => a.split('=', 2) as [string, string]));
      const env = new Map(readFileSync(join(record, `${file}.env`), 'utf8').trimEnd().split('\n').map((l) => l.split('=', 2) as [string, string]));
      return { file, argv, flags, env };
    });
}

const HEAD_FLAGS: [string, string][] = [
  ['--port', 'GCS'], ['--node-manager-port', 'NODE_MANAGER'], ['--object-manager-port', 'OBJECT_MANAGER'],
  ['--ray-client-server-port', 'CLIENT'], ['--dashboard-port', 'DASHBOARD'],
  ['--dashboard-agent-grpc-port', 'AGENT_GRPC'], ['--dashboard-agent-listen-port', 'AGENT_HTTP'],
  ['--metrics-export-port', 'METRICS'], ['--runtime-env-agent-port', 'RUNTIME_ENV'],
  ['--min-worker-port', 'WORKERS_FIRST'], ['--max-worker-port', 'WORKERS_LAST'],
];
const HEAD_ONLY = new Set(['--port', '--ray-client-server-port', '--dashboard-port']);
const WORKER_FLAGS = HEAD_FLAGS.filter(([f]) => !HEAD_ONLY.has(f));

/** Every port flag of a node carries the port berth leased for that entry; returns its ports (worker range expanded). */
function checkNode(n: Node, flags: [string, string][]): number[] {
  const ports: number[] = [];
  for (const [flag, env] of flags) {
    const v = n.flags.get(flag);
    assert.ok(v !== undefined, `${n.file}: ${flag} missing in ${n.argv.join(' ')}`);
    assert.equal(v, n.env.get(`BERTH_PORT_${env}`), `${n.file}: ${flag}=${v}, berth leased BERTH_PORT_${env}=${n.env.get(`BERTH_PORT_${env}`)}`);
    if (!flag.endsWith('-worker-port')) ports.push(Number(v));
  }
  const lo = Number(n.flags.get('--min-worker-port'));
  const hi = Number(n.flags.get('--max-worker-port'));
  assert.equal(hi - lo + 1, Number(n.env.get('BERTH_PORT_WORKERS_COUNT')), `${n.file}: the worker range is the whole leased block`);
  for (let p = lo; p <= hi; p++) ports.push(p);
  return ports;
}

test('Ray cluster recipe on the 3-node test cluster: head on n1, a worker node on n2 and n3, every Ray port from berth, workers join at --address', { timeout: 180_000 }, async (t) => {
  if (!requireSlurm(t)) return;
  const record = mkdtempSync(join(tmpdir(), 'berth-recipe-ray-'));
  t.after(() => rmSync(record, { recursive: true, force: true }));
  const r = await sbatch(`"${process.execPath}" "${BERTH}" up "${STACK}" --run-dir "$PWD/run"`, {
    args: ['-N3'],
    env: { BERTH_STATE_DIR: tempStateDir(), FAKE_RAY_RECORD: record, PATH: `${FAKE_BIN}:${dirname(process.execPath)}:${process.env.PATH}` },
    timeoutMs: 150_000,
  });
  assert.equal(r.code, 0, describeJob(r));
  const nodes = recorded(record);
  assert.deepEqual(nodes.map((n) => n.file), ['head-n1-0', 'worker-n2-0', 'worker-n3-0'], describeJob(r));
  const [head, ...workers] = nodes as [Node, Node, Node];
  assert.deepEqual(head.argv.slice(0, 4), ['start', '--head', '--block', '--disable-usage-stats']);
  const all = checkNode(head, HEAD_FLAGS);
  const gcs = head.flags.get('--port');
  for (const w of workers) {
    assert.deepEqual(w.argv.slice(0, 3), ['start', '--block', '--disable-usage-stats']);
    // The head runs on the first node; n1's address is 127.0.0.1 (the emulated nodes' NodeAddr).
    assert.equal(w.flags.get('--address'), `127.0.0.1:${gcs}`);
    for (const f of HEAD_ONLY) assert.equal(w.flags.get(f), undefined, `${w.file}: ${f} is the head's`);
    all.push(...checkNode(w, WORKER_FLAGS));
  }
  // The emulated nodes share one port space: no port of one node may be another's.
  assert.equal(new Set(all).size, all.length, 'ports repeat across the nodes');
  // `ray status` asked the head's GCS: the head and both workers registered.
  const status = r.out + r.err;
  assert.match(status, /^3 nodes$/m, describeJob(r));
  assert.match(status, new RegExp(`^ 1 node_n1:${head.flags.get('--node-manager-port')} \\(head\\)$`, 'm'));
  for (const [i, w] of workers.entries()) assert.match(status, new RegExp(`^ 1 node_n${i + 2}:${w.flags.get('--node-manager-port')}$`, 'm'));
  // Every node listened only on its leased ports (berth's listener audit, in every node's records).
  const ep = JSON.parse(readFileSync(join(r.dir, 'run', 'endpoints.json'), 'utf8')) as { replicas: { service: string; node?: string; unexpectedListeners?: unknown[] }[] };
  assert.deepEqual(ep.replicas.filter((x) => x.service !== 'check').map((x) => [x.service, x.node ?? 'n1', x.unexpectedListeners ?? []]).sort((a, b) => String(a[1]).localeCompare(String(b[1]))), [['head', 'n1', []], ['worker', 'n2', []], ['worker', 'n3', []]]);
});

test('Ray cluster recipe, the head alone on one host: every head port flag from berth, ray status reaches its GCS', { timeout: 120_000 }, async (t) => {
  if (!requireNetns(t)) return;
  const dir = mkdtempSync(join(tmpdir(), 'berth-recipe-ray-head-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // The recipe's own head and check, without the worker nodes (which need an allocation).
  const doc = parse(readFileSync(STACK, 'utf8')) as { services: Record<string, { depends_on?: Record<string, string> }> };
  delete doc.services.worker;
  doc.services.check!.depends_on = { head: 'ready' };
  writeFileSync(join(dir, 'stack.yaml'), stringify(doc));
  const record = join(dir, 'record');
  mkdirSync(record);
  const r = await berth(['up', join(dir, 'stack.yaml'), '--run-dir', join(dir, 'run')], {
    netns: {},
    env: { BERTH_STATE_DIR: join(dir, 'state'), FAKE_RAY_RECORD: record, PATH: `${FAKE_BIN}:${process.env.PATH}` },
    timeoutMs: 100_000,
  });
  assert.equal(r.code, 0, r.stderr);
  const nodes = recorded(record);
  assert.equal(nodes.length, 1, nodes.map((n) => n.file).join(' '));
  const ports = checkNode(nodes[0]!, HEAD_FLAGS);
  assert.equal(new Set(ports).size, ports.length, 'ports repeat');
  assert.match(r.stdout, /^1 nodes$/m, r.stdout);
  const ep = JSON.parse(readFileSync(join(dir, 'run', 'endpoints.json'), 'utf8')) as { replicas: { service: string; unexpectedListeners?: unknown[] }[] };
  assert.equal(ep.replicas.find((x) => x.service === 'head')?.unexpectedListeners, undefined, 'the head listens only on its leased ports');
});
