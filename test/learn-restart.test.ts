/**
 * A replica whose port is learned comes back from a restart on another port: its dependents,
 * given the old one, are named in one line and started again with the new one when they allow
 * restarts; one that does not stops the stack with 70 naming the stale port. Real processes in
 * a network namespace; the server (test/fixtures/services/learn-moving.py) never takes its last
 * start's port again, so the move is certain.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { box, up } from './fixtures/up/harness.js';
import { SERVICES } from './fixtures/services/launch-harness.js';

const MOVING = join(SERVICES, 'learn-moving.py');
const stack = (depRestart: string) => `
services:
  web:
    port: learn
    restart: on-failure
    command: [/usr/bin/python3, ${JSON.stringify(MOVING)}, "{dir}/last-port"]
    ready: http://127.0.0.1:{port}/
  dep:
    port: none
    depends_on: { web: ready }
${depRestart}    ready: cmd:test -s {dir}/given
    command: [sh, -c, 'echo "given {web.port}" >> {dir}/given; echo "given {web.port}"; exec sleep 600']
  job:
    job: true
    depends_on: { dep: ready }
    command: [sleep, "600"]
`;

const lastPort = (runDir: string) => Number(readFileSync(join(runDir, 'data/web-0/last-port'), 'utf8'));

/** The stack up and ready, then web's process SIGKILLed: web restarts (on another port). */
async function upThenKillWeb(t: TestContext, depRestart: string) {
  const b = box(stack(depRestart));
  t.after(() => b.cleanup());
  const u = up(b, [], { timeoutMs: 90_000 });
  t.after(() => u.child.kill('SIGKILL'));
  await u.waitStderr(/stack ready/, 60_000);
  const first = lastPort(b.runDir);
  const doc = JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8'));
  process.kill(doc.replicas.find((r: { service: string }) => r.service === 'web').pid, 'SIGKILL');
  return { b, u, first };
}

test('learned port moved by a restart: the dependent is named and restarted with the new port', async (t) => {
  if (!requireNetns(t)) return;
  const { b, u, first } = await upThenKillWeb(t, '    restart: on-failure\n');
  await u.waitStderr(/dep\/0 ready.*[\s\S]*dep\/0 ready/, 60_000);
  const second = lastPort(b.runDir);
  assert.notEqual(second, first);
  assert.match(u.stderr(), new RegExp(`warning: web/0 came back on other ports than before \\(port ${first} → ${second}\\); dep/0 was given the old one`));
  assert.deepEqual(readFileSync(join(b.runDir, 'data/dep-0/given'), 'utf8').trim().split('\n'), [`given ${first}`, `given ${second}`]);
  u.child.kill('SIGTERM');
  await u.result;
});

test('learned port moved by a restart: a dependent that does not allow restarts stops the stack with 70 naming the stale port', async (t) => {
  if (!requireNetns(t)) return;
  const { u, first } = await upThenKillWeb(t, '');
  const r = await u.result;
  assert.equal(r.code, 70, r.stderr);
  assert.match(r.stderr, new RegExp(`dep/0 uses web/0's old port \\(port ${first} → \\d+\\), and it does not allow restarts \\(restart: on-failure\\): it would talk to a stale port`));
});
