import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BerthError } from '../src/errors.js';
import { parseStack } from '../src/stack/file/load.js';
import { resolveTemplate } from '../src/stack/file/fill-placeholders.js';
import { replicaSource } from '../src/stack/file/sources.js';
import type { HostSysctls } from '../src/host/host-map.js';

// Stack files with Slurm's keys: replicas: gpus, {gpu}, nodes: all|N.
const BANDS = 'bands:\n  engines: { range: 21000-21799, window: 100 }\n  proxy: { range: 22000-22099 }\n';

const errorsOf = (text: string): string[] => {
  try {
    parseStack(text, 's.yaml', '.');
  } catch (e) {
    assert.ok(e instanceof BerthError && e.exitCode === 65, String(e));
    return e.details!.errors as string[];
  }
  assert.fail('the stack was accepted');
};

test('replicas: gpus takes window (instance + GPU index); {gpu} fills in; {gpu} needs replicas: gpus', () => {
  const s = parseStack(
    `${BANDS}services:
  engine:
    replicas: gpus
    band: engines
    command: [serve, --port, "{port}", --gpu, "{gpu}"]
    env: { WHICH: "gpu{gpu}" }
`,
    's.yaml',
    '.',
  );
  const engine = s.services[0]!;
  assert.equal(engine.replicas, 'gpus');
  const host = {} as HostSysctls;
  assert.deepEqual(replicaSource(s, engine, 0, host, 3), { kind: 'band', band: 'engines', range: { lo: 21300, hi: 21399 }, layoutFile: 's.yaml', instance: 3 });
  assert.deepEqual(replicaSource(s, engine, 1, host), { kind: 'band', band: 'engines', range: { lo: 21100, hi: 21199 }, layoutFile: 's.yaml', instance: 1 });
  const ctx = { name: 'engine', replica: 0, host: '127.0.0.1', port: 21300, gpu: 3, endpoints: new Map() };
  assert.equal(resolveTemplate('gpu{gpu}:{port}', ctx), 'gpu3:21300');
  assert.throws(() => resolveTemplate('{gpu}', { ...ctx, gpu: undefined }), (e: unknown) => e instanceof BerthError && e.exitCode === 70);
  assert.deepEqual(errorsOf(`${BANDS}services:\n  a:\n    replicas: 2\n    band: engines\n    command: [x, "{gpu}"]\n`), [
    's.yaml:8: service "a": command[1] uses {gpu}, but the service does not have "replicas: gpus" (one replica per GPU of the Slurm job)',
  ]);
});

test('nodes: all | N parses; nodes services listen on 0.0.0.0 unless host is given', () => {
  const s = parseStack(
    `${BANDS}services:
  engine:
    nodes: all
    band: engines
    command: [serve, "{port}"]
  worker:
    nodes: 2
    host: 127.0.0.1
    command: [work, "{port}", "{engine.urls}"]
    depends_on: [engine]
  proxy:
    band: proxy
    command: [proxy, "{port}", "{engine.urls}"]
    depends_on: [engine]
`,
    's.yaml',
    '.',
  );
  const [engine, worker, proxy] = s.services;
  assert.equal(engine!.nodes, 'all');
  assert.equal(engine!.host, '0.0.0.0');
  assert.equal(worker!.nodes, 2);
  assert.equal(worker!.host, '127.0.0.1');
  assert.equal(proxy!.nodes, undefined);
  assert.equal(proxy!.host, '127.0.0.1');
});

test('nodes: errors name the line: bad values, node dependencies some nodes cannot meet; a local dependency and a nodes: job are fine', () => {
  assert.deepEqual(
    errorsOf(`services:
  a:
    nodes: 0
    command: [x]
  b:
    nodes: some
    command: [x]
  local:
    command: [x]
  c:
    nodes: all
    command: [x]
    depends_on: [local, d]
  d:
    nodes: 2
    command: [x]
  client:
    nodes: all
    job: true
    command: [x]
  w:
    nodes: others
    command: [x]
    depends_on: [c, w2, local]
  w2:
    nodes: others
    command: [x]
  e:
    nodes: 1
    command: [x]
    depends_on: [w2, d]
`),
    [
      's.yaml:3: service "a": nodes must be "all", "others" (every node but the first) or a whole number ≥ 1 (the first N nodes of the Slurm allocation), found number 0',
      's.yaml:6: service "b": nodes must be "all", "others" (every node but the first) or a whole number ≥ 1 (the first N nodes of the Slurm allocation), found the text "some"',
      's.yaml:13: service "c": has nodes: all but depends on "d" with nodes: 2: some of its nodes would have nothing to wait for; give "d" nodes: all (or at least the same nodes)',
      's.yaml:31: service "e": has nodes: 1 but depends on "w2" with nodes: others: the first node has none of it; give "w2" nodes: all (or at least the same nodes)',
    ],
  );
  // Cycles across nodes are still cycles.
  const cyc = errorsOf('services:\n  head:\n    command: [x]\n    depends_on: [worker]\n  worker:\n    nodes: others\n    command: [x]\n    depends_on: [head]\n');
  assert.equal(cyc.length, 1, cyc.join('\n'));
  assert.match(cyc[0]!, /cycle/);
});

test('multi-node plan: agents on the first M nodes; nodes: N beyond the allocation is 65; one node runs locally', async () => {
  const { planNodes, agentServices, externalEndpoints } = await import('../src/stack/multi-node/index.js');
  const { agentStepArgv } = await import('../src/slurm/agent-step.js');
  const { nodeKey } = await import('../src/stack/multi-node/node-files.js');
  const s = parseStack(
    `services:
  engine: { nodes: all, command: [e, "{port}"] }
  cache: { nodes: 2, command: [c, "{port}"] }
  proxy: { command: [p, "{port}", "{engine.urls}", "{cache.urls}"], depends_on: [engine, cache] }
`,
    's.yaml',
    '.',
  );
  const job = { SLURM_JOB_ID: '9', SLURM_JOB_NODELIST: 'gpu[1-4]' };
  const plan = planNodes(s, job)!;
  assert.deepEqual(plan.nodes, ['gpu1', 'gpu2', 'gpu3', 'gpu4']);
  assert.deepEqual(plan.agentNodes, ['gpu1', 'gpu2', 'gpu3', 'gpu4']);
  assert.deepEqual(plan.local.services.map((x) => x.name), ['proxy']);
  assert.deepEqual(agentServices(s, 1, 4).map((x) => x.name), ['engine', 'cache']);
  assert.deepEqual(agentServices(s, 2, 4).map((x) => x.name), ['engine']);
  assert.equal(planNodes(s, { SLURM_JOB_ID: '9', SLURM_JOB_NODELIST: 'gpu[1-2]' })!.agentNodes.length, 2);
  assert.throws(
    () => planNodes(s, { SLURM_JOB_ID: '9', SLURM_JOB_NODELIST: 'gpu1' }),
    /s\.yaml:3: service "cache": nodes: 2, but job 9 has 1 node \(gpu1\); ask Slurm for more nodes/,
  );
  const one = parseStack('services:\n  engine: { nodes: all, command: [e, "{port}"] }\n', 's.yaml', '.');
  assert.equal(planNodes(one, {}), undefined, 'outside Slurm nodes: all is this host');
  assert.equal(planNodes(parseStack('services:\n  a: { command: [x] }\n', 's.yaml', '.'), { SLURM_JOB_ID: 'bad' }), undefined, 'no nodes: never reads Slurm');

  const files = new Map([
    ['gpu1', { node: 'gpu1', pid: 1, state: 'ready' as const, updated: '', services: { engine: [{ replica: 0, host: '0.0.0.0', port: 21000 }], cache: [{ replica: 0, host: '10.0.0.1', port: 23000 }] } }],
    ['gpu2', { node: 'gpu2', pid: 1, state: 'ready' as const, updated: '', services: { engine: [{ replica: 0, host: '0.0.0.0', port: 21001 }], cache: [{ replica: 0, host: '0.0.0.0', port: 23000 }] } }],
    ['gpu3', { node: 'gpu3', pid: 1, state: 'ready' as const, updated: '', services: { engine: [{ replica: 0, host: '::', port: 21000 }] } }],
  ]);
  const ext = externalEndpoints(plan, files, new Map([['gpu1', 'gpu1'], ['gpu2', '10.0.0.2'], ['gpu3', 'gpu3']]));
  // Each endpoint carries its node and that node's index among the service's (a template's replica entries).
  assert.deepEqual(ext.get('engine'), [{ host: 'gpu1', port: 21000, node: 'gpu1', nodeRank: 0 }, { host: '10.0.0.2', port: 21001, node: 'gpu2', nodeRank: 1 }, { host: 'gpu3', port: 21000, node: 'gpu3', nodeRank: 2 }]);
  assert.deepEqual(ext.get('cache'), [{ host: '10.0.0.1', port: 23000, node: 'gpu1', nodeRank: 0 }, { host: '10.0.0.2', port: 23000, node: 'gpu2', nodeRank: 1 }]);

  assert.deepEqual(agentStepArgv({ nodes: ['n1', 'n2', 'n3'], agent: ['node', 'berth.js', 'up', '/s.yaml', '--agent', '/run'] }), [
    'srun', '--nodes=3', '--ntasks=3', '--ntasks-per-node=1', '--nodelist=n[1-3]', '--overlap', '--kill-on-bad-exit=0', '--job-name=berth-agents', '--',
    'node', 'berth.js', 'up', '/s.yaml', '--agent', '/run',
  ]);
  assert.equal(nodeKey('n1'), 'n1');
  assert.equal(nodeKey('../x'), '.._x');
  assert.equal(nodeKey('..'), 'node_..');
});

test('nodes: others: every node but the first (no agent there); beyond one node only; loopback and wildcard hosts are reached at the node\'s address', async () => {
  const { planNodes, agentServices } = await import('../src/stack/multi-node/index.js');
  const { reachAt, serviceNodes } = await import('../src/stack/multi-node/plan.js');
  const s = parseStack(
    `services:
  head: { host: 0.0.0.0, command: [h, "{port}"] }
  worker: { nodes: others, command: [w, "{port}", "{head.url}"], depends_on: { head: ready } }
  cache: { nodes: 2, command: [c, "{port}"] }
`,
    's.yaml',
    '.',
  );
  const plan = planNodes(s, { SLURM_JOB_ID: '9', SLURM_JOB_NODELIST: 'gpu[1-4]' })!;
  assert.deepEqual(plan.agentNodes, ['gpu1', 'gpu2', 'gpu3', 'gpu4']);
  assert.deepEqual(plan.local.services.map((x) => x.name), ['head']);
  assert.deepEqual(agentServices(s, 0, 4).map((x) => x.name), ['cache']);
  assert.deepEqual(agentServices(s, 1, 4).map((x) => x.name), ['worker', 'cache']);
  assert.deepEqual(agentServices(s, 3, 4).map((x) => x.name), ['worker']);
  assert.deepEqual(serviceNodes('others', ['a', 'b', 'c']), ['b', 'c']);
  const only = parseStack('services:\n  head: { command: [h] }\n  worker: { nodes: others, command: [w], depends_on: [head] }\n', 's.yaml', '.');
  assert.deepEqual(planNodes(only, { SLURM_JOB_ID: '9', SLURM_JOB_NODELIST: 'gpu[1-3]' })!.agentNodes, ['gpu2', 'gpu3'], 'no agent on the first node when it has no nodes: service');
  assert.throws(
    () => planNodes(only, { SLURM_JOB_ID: '9', SLURM_JOB_NODELIST: 'gpu1' }),
    (e: unknown) => e instanceof BerthError && e.exitCode === 65 && /^s\.yaml:3: service "worker": nodes: others runs on every node but the first, but job 9 has 1 node \(gpu1\)/.test(e.message),
  );
  assert.throws(() => planNodes(only, {}), /nodes: others .* berth up is not inside a Slurm job/);
  const addr = new Map([['gpu2', '10.0.0.2']]);
  for (const h of ['0.0.0.0', '::', '127.0.0.1', '::1', 'localhost', null]) assert.equal(reachAt(h, 'gpu2', addr), '10.0.0.2', String(h));
  assert.equal(reachAt('10.1.2.3', 'gpu2', addr), '10.1.2.3');
  assert.equal(reachAt('0.0.0.0', 'gpu9', addr), 'gpu9', 'a node without a known address: its name');
});

test('berth up refuses replicas: gpus in a job without GPUs (65, file:line), before making a run directory', async () => {
  const { runStack } = await import('../src/stack/run/orchestrate.js');
  const s = parseStack(`${BANDS}services:\n  engine:\n    replicas: gpus\n    band: engines\n    command: [x, "{port}"]\n`, 's.yaml', '.');
  assert.throws(
    () => runStack(s, { env: { SLURM_JOB_ID: '4' }, runDir: '/nonexistent/never-made' }),
    (e: unknown) => e instanceof BerthError && e.exitCode === 65 && /^s\.yaml:5: service "engine": replicas: gpus, but this job has no GPU/.test(e.message),
  );
  assert.throws(
    () => runStack(s, { env: { SLURM_STEP_GPUS: '0,x' }, runDir: '/nonexistent/never-made' }),
    (e: unknown) => e instanceof BerthError && e.exitCode === 65 && /^s\.yaml:5: service "engine": replicas: gpus: SLURM_STEP_GPUS="0,x"/.test(e.message),
  );
});
