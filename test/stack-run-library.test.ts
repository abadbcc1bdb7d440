/**
 * The library face of `berth up`: runStack() returns a handle whose `ready` resolves with
 * the endpoints once every service is ready, whose stop() tears the stack down (exit code
 * 0 when no signal is named) and whose `done` settles with the result.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { requireNetns, runInNetns, tsNode } from './helpers/netns.js';
import { box, svc } from './fixtures/up/harness.js';

test('runStack(): ready, endpoints(), stop(), done', async (t) => {
  if (!requireNetns(t)) return;
  const b = box(`
services:
  web:
    replicas: 2
    range: 20000-20099
    command: ${svc('--port', '{port}')}
    ready: http://127.0.0.1:{port}/health
  worker:
    port: none
    command: ${svc('--show')}
    depends_on: { web: ready }
`);
  t.after(() => b.cleanup());
  const r = await runInNetns({}, tsNode(join('test', 'fixtures', 'up', 'library-driver.ts'), b.stack, b.runDir), { env: { ...process.env, BERTH_STATE_DIR: b.stateDir } });
  assert.equal(r.code, 0, r.stderr);
  const o = JSON.parse(r.stdout.trim().split('\n').pop()!);
  assert.equal(o.runDir, b.runDir);
  assert.deepEqual(o.ready.replicas.map((x: { service: string; state: string; url: string | null }) => [x.service, x.state, x.url]), [
    ['web', 'ready', 'http://127.0.0.1:20000'],
    ['web', 'ready', 'http://127.0.0.1:20001'],
    ['worker', 'ready', null],
  ]);
  assert.equal(o.during.pid, o.ready.pid);
  assert.deepEqual(o.result, { exitCode: 0, reason: 'stopped', runDir: b.runDir, readyMs: o.result.readyMs });
  assert.ok(o.result.readyMs > 0);
  assert.equal(o.same, true, 'a second stop() gives the same result');
  for (const who of ['web/0', 'web/1', 'worker/0']) assert.equal(o.events.filter((e: string) => e.startsWith(`${who}:`)).pop(), `${who}:exited`);
  assert.ok(o.events.indexOf('worker/0:exited') < o.events.indexOf('web/0:stopping'), 'worker (the dependent) is stopped first');
});
