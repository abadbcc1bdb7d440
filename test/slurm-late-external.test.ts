/**
 * The mechanism multi-node stacks run on, without Slurm: services that run elsewhere are
 * external services of an ordinary orchestrator (RunStackOptions.externalServices), pending to
 * their dependents until StackHandle.setExternal makes them known, recorded with their node
 * (recordExternal), and stopped in their place of the stop order (stopExternal). The first
 * node's plan makes a service that depends on one node service stop before every node service.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseStack } from '../src/stack/file/load.js';
import { planNodes } from '../src/stack/multi-node/index.js';
import { graphNodes } from '../src/stack/multi-node/plan.js';
import { runStack } from '../src/stack/run/orchestrate.js';
import { tempStateDir } from './helpers/cli.js';

const STACK = `services:
  head: { port: none, command: [sh, -c, 'exec sleep 30'] }
  engine: { nodes: all, command: [e, "{port}"] }
  monitor: { nodes: all, port: none, command: [m] }
  worker: { nodes: others, port: none, command: [w], depends_on: { head: started } }
  proxy:
    port: none
    command: [sh, -c, 'echo "backends $0"; exec sleep 30', "{engine.urls}"]
    depends_on: { engine: ready }
`;

const until = async (what: () => boolean, ms = 10_000) => {
  const t0 = Date.now();
  while (!what()) {
    if (Date.now() - t0 > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
};

test('external services: pending until known, then their dependents start with their endpoints; recorded with their node; stopped after their dependents, before what they depend on', async () => {
  const spec = parseStack(STACK, join(process.cwd(), 's.yaml'), process.cwd());
  const plan = planNodes(spec, { SLURM_JOB_ID: '1', SLURM_JOB_NODELIST: 'n[1-3]' })!;
  assert.deepEqual(plan.local.services.map((s) => s.name), ['head', 'proxy']);
  // proxy waits for (and stops before) every node service, not only engine: the agents stop them all at once.
  assert.deepEqual(plan.local.services[1]!.dependsOn.map((d) => `${d.service}:${d.condition}`), ['engine:ready', 'monitor:started', 'worker:started']);
  const log: string[] = [];
  const runDir = join(mkdtempSync(join(tmpdir(), 'berth-late-')), 'run');
  const h = runStack(plan.local, {
    runDir,
    stateDir: tempStateDir(),
    stdout: null,
    stderr: null,
    externalServices: graphNodes(plan.nodeServices),
    stopExternal: async (name) => {
      log.push(`stop ${name}`);
      await new Promise((r) => setTimeout(r, 50));
    },
    onEvent: (e) => log.push(`${e.service}/${e.replica}${e.node ? `@${e.node}` : ''} ${e.state}`),
  });
  await until(() => log.includes('head/0 starting'));
  await new Promise((r) => setTimeout(r, 300));
  assert.ok(!log.some((l) => l.startsWith('proxy/0 starting')), `proxy started before engine was known: ${log.join(', ')}`);
  h.recordExternal({ service: 'engine', replica: 0, node: 'n2', state: 'ready', host: '10.0.0.2', port: 21000, pid: 77 });
  h.setExternal('engine', [{ host: '10.0.0.1', port: 21000 }, { host: '10.0.0.2', port: 21000 }]);
  h.setExternal('monitor', []);
  await new Promise((r) => setTimeout(r, 300));
  assert.ok(!log.some((l) => l.startsWith('proxy/0 starting')), 'proxy also waits for the other node services');
  h.setExternal('worker', []);
  await until(() => log.includes('proxy/0 starting'));
  await until(() => readFileSync(join(runDir, 'logs', 'proxy-0.out'), 'utf8').includes('\n'));
  assert.equal(readFileSync(join(runDir, 'logs', 'proxy-0.out'), 'utf8'), 'backends http://10.0.0.1:21000,http://10.0.0.2:21000\n');
  const doc = h.endpoints();
  assert.deepEqual(
    doc.replicas.find((r) => r.node === 'n2'),
    { service: 'engine', replica: 0, node: 'n2', host: '10.0.0.2', port: 21000, url: 'http://10.0.0.2:21000', pid: 77, state: 'ready', since: doc.replicas.find((r) => r.node === 'n2')!.since },
  );
  assert.ok(log.includes('engine/0@n2 ready'), 'recorded replicas are events too');
  const result = await h.stop();
  assert.equal(result.exitCode, 0);
  const at = (x: string) => log.indexOf(x);
  for (const ext of ['engine', 'monitor', 'worker']) {
    assert.ok(at(`stop ${ext}`) > at('proxy/0 exited'), `${ext} stopped after proxy exited: ${log.join(', ')}`);
    assert.ok(at(`stop ${ext}`) < at('head/0 stopping'), `${ext} stopped before head: ${log.join(', ')}`);
  }
  const events = readFileSync(join(runDir, 'events.jsonl'), 'utf8');
  assert.match(events, /"service":"engine","replica":0,"node":"n2","state":"ready"/);
});
