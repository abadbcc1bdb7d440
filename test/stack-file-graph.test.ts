import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  blockedServices,
  conditionStatus,
  findCycles,
  startable,
  startOrder,
  teardownOrder,
  teardownWaves,
  type DependCondition,
  type GraphNode,
  type ReplicaStatus,
} from '../src/stack/index.js';

const node = (name: string, deps: Record<string, DependCondition> = {}): GraphNode => ({
  name,
  dependsOn: Object.entries(deps).map(([service, condition]) => ({ service, condition })),
});

// The demo's shape plus an independent sidecar and a one-shot prep step.
const demo = [
  node('engine', { prep: 'completed' }),
  node('proxy', { engine: 'ready' }),
  node('sidecar'),
  node('client', { proxy: 'ready' }),
  node('prep'),
];

const st = (...states: (ReplicaStatus['state'] | [ReplicaStatus['state'], number | null])[]): ReplicaStatus[] =>
  states.map((s) => (Array.isArray(s) ? { state: s[0], code: s[1] } : { state: s }));

test('startOrder: dependencies first, file order among equals', () => {
  assert.deepEqual(startOrder(demo), ['sidecar', 'prep', 'engine', 'proxy', 'client']);
  assert.deepEqual(startOrder([node('b', { a: 'ready' }), node('a'), node('c', { zz: 'ready' })]), ['a', 'b', 'c'], 'unknown dependencies are ignored (the loader reports them)');
  assert.deepEqual(startOrder([node('a', { b: 'ready' }), node('b', { a: 'ready' }), node('c')]), ['c'], 'a cycle is left out');
});

test('findCycles: each cycle as a path back to its start', () => {
  assert.deepEqual(findCycles(demo), []);
  assert.deepEqual(findCycles([node('a', { c: 'ready' }), node('b', { a: 'ready' }), node('c', { b: 'started' })]), [['a', 'c', 'b', 'a']]);
  assert.deepEqual(findCycles([node('a', { a: 'ready' })]), [['a', 'a']]);
  assert.deepEqual(
    findCycles([node('x', { y: 'ready' }), node('y', { x: 'ready', z: 'ready' }), node('z', { y: 'ready' }), node('w', { missing: 'ready' })]),
    [['x', 'y', 'x'], ['y', 'z', 'y']],
  );
});

test('conditionStatus: started, ready, completed over all replicas', () => {
  assert.equal(conditionStatus('started', st()), 'waiting', 'no replicas yet');
  assert.equal(conditionStatus('started', st('starting', 'pending')), 'waiting');
  assert.equal(conditionStatus('started', st('starting', 'owned')), 'met');
  assert.equal(conditionStatus('started', st('ready', ['exited', 0])), 'met');
  assert.equal(conditionStatus('started', st('ready', 'failed')), 'never');

  assert.equal(conditionStatus('ready', st('ready', 'owned')), 'waiting');
  assert.equal(conditionStatus('ready', st('ready', 'ready')), 'met');
  assert.equal(conditionStatus('ready', st('ready', ['exited', 0])), 'never', 'a server that exited is not ready');
  assert.equal(conditionStatus('ready', st('ready', 'stopping')), 'never');
  assert.equal(conditionStatus('ready', st('starting', 'failed')), 'never');

  assert.equal(conditionStatus('completed', st('ready')), 'waiting');
  assert.equal(conditionStatus('completed', st(['exited', 0], 'ready')), 'waiting');
  assert.equal(conditionStatus('completed', st(['exited', 0], ['exited', 0])), 'met');
  assert.equal(conditionStatus('completed', st(['exited', 0], ['exited', 1])), 'never');
  assert.equal(conditionStatus('completed', st(['exited', null])), 'never', 'killed by a signal is not completed');
});

test('startable: what may start now as the stack comes up', () => {
  const status = new Map<string, ReplicaStatus[]>();
  const set = (name: string, s: ReplicaStatus[]) => status.set(name, s);
  for (const n of demo) set(n.name, st('pending'));
  set('engine', st('pending', 'pending'));
  assert.deepEqual(startable(demo, status), ['sidecar', 'prep'], 'independent services start together');
  set('sidecar', st('starting'));
  set('prep', st('ready'));
  assert.deepEqual(startable(demo, status), [], 'engine waits for prep to complete, not just be ready');
  set('prep', st(['exited', 0]));
  assert.deepEqual(startable(demo, status), ['engine']);
  set('engine', st('ready', 'owned'));
  assert.deepEqual(startable(demo, status), [], 'proxy waits for every engine replica');
  set('engine', st('ready', 'ready'));
  assert.deepEqual(startable(demo, status), ['proxy']);
  set('proxy', st('starting'));
  assert.deepEqual(startable(demo, status), [], 'started services are not startable again');
  set('proxy', st('ready'));
  assert.deepEqual(startable(demo, status), ['client']);
  assert.deepEqual(startable([node('a')], new Map()), ['a'], 'no status yet means pending');
});

test('blockedServices: a dependency that can no longer meet its condition', () => {
  const status = new Map<string, ReplicaStatus[]>([
    ['prep', st(['exited', 2])],
    ['engine', st('pending')],
    ['proxy', st('pending')],
    ['sidecar', st('ready')],
    ['client', st('pending')],
  ]);
  assert.deepEqual(blockedServices(demo, status), [{ service: 'engine', dependency: 'prep', condition: 'completed' }]);
  status.set('prep', st(['exited', 0]));
  status.set('engine', st('ready', 'owned'));
  assert.deepEqual(blockedServices(demo, status), [], 'engine is still on its way');
  status.set('engine', st('ready', 'failed'));
  assert.deepEqual(blockedServices(demo, status), [{ service: 'proxy', dependency: 'engine', condition: 'ready' }]);
  status.set('engine', st('ready', ['exited', 3]));
  assert.deepEqual(blockedServices(demo, status), [{ service: 'proxy', dependency: 'engine', condition: 'ready' }]);
});

test('teardown: dependents first, then the latest started', () => {
  const started = ['sidecar', 'prep', 'engine', 'proxy', 'client'];
  assert.deepEqual(teardownOrder(demo, started), ['client', 'proxy', 'engine', 'prep', 'sidecar']);
  assert.deepEqual(teardownWaves(demo, started), [['client', 'sidecar'], ['proxy'], ['engine'], ['prep']]);
  // Only what started is stopped; a restarted dependency counts at its last start but still
  // goes after its dependents.
  assert.deepEqual(teardownOrder(demo, ['sidecar', 'prep', 'engine', 'proxy', 'engine']), ['proxy', 'engine', 'prep', 'sidecar']);
  assert.deepEqual(teardownOrder(demo, ['engine']), ['engine']);
  assert.deepEqual(teardownOrder(demo, []), []);
  // Concurrent starts: independent services stop in reverse start order.
  const flat = [node('a'), node('b'), node('c')];
  assert.deepEqual(teardownOrder(flat, ['b', 'c', 'a']), ['a', 'c', 'b']);
  assert.deepEqual(teardownWaves(flat, ['b', 'c', 'a']), [['a', 'c', 'b']]);
  // Total even on a cycle (never loaded): start order decides.
  assert.deepEqual(teardownOrder([node('x', { y: 'ready' }), node('y', { x: 'ready' })], ['x', 'y']), ['y', 'x']);
});
