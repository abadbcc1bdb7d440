/**
 * `berth up` ordering: a dependent starts only once its dependencies meet their condition
 * (ready, started, completed), independent services start together, placeholders carry the
 * dependencies' real endpoints, and the job's status is the stack's. Times come from
 * events.jsonl. Runs in a network namespace of its own (fixed ports).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { at, box, events, lastAt, logFile, svc, up } from './fixtures/up/harness.js';

const STACK = `
bands:
  a: { range: 20000-20199, window: 100 }
services:
  a:
    replicas: 2
    band: a
    command: ${svc('--port', '{port}', '--ready-after', '400', '--term-delay', '50')}
    ready: http://127.0.0.1:{port}/health
  b:
    port: 20500
    command: ${svc('--port', '{port}', '--ready-after', '1200')}
    ready: http://127.0.0.1:{port}/health
  setup:
    port: none
    command: ${svc('--exit-after', '300')}
  c:
    range: 20600-20699
    command: ${svc('--port', '{port}', '--show', '--a', '{a.urls}', '--ap', '{a.ports}', '--b', '{b.url}', '--bp', '{b.port}', '--me', '{name}/{replica}', '--lit', '{{"k": 1}')}
    env: { X_A: "{a.urls}", X_B: "{b.url}", X_SELF: "{host}:{port}" }
    depends_on: { a: ready, b: started }
    ready: http://127.0.0.1:{port}/health
  d:
    port: none
    command: ${svc('--show', '--c', '{c.url}')}
    depends_on: { c: ready, setup: completed }
  job:
    command: ${svc('--exit-after', '100', '--code', '3')}
    depends_on: { d: started, b: ready }
    job: true
`;

test('dependencies, concurrency, placeholders, the job\'s status, teardown after the job', async (t) => {
  if (!requireNetns(t)) return;
  const b = box(STACK);
  t.after(() => b.cleanup());
  const run = up(b, ['--json']);
  const r = await run.result;
  assert.equal(r.code, 3, `the job's status is the stack's\n${r.stderr}`);
  const evs = events(b);

  // Independent services start together, without waiting for each other's readiness.
  const starts = ['a/0', 'a/1', 'b/0', 'setup/0'].map((w) => at(evs, w, 'starting'));
  assert.ok(Math.max(...starts) - Math.min(...starts) < 400, `independent services start together: ${starts}`);
  assert.ok(at(evs, 'b/0', 'starting') < at(evs, 'a/0', 'ready'));

  // ready: c after both a replicas; started: c does not wait for b to be ready.
  const cStart = at(evs, 'c/0', 'starting');
  assert.ok(cStart >= lastAt(evs, 'a', 'ready'), 'c starts after every replica of a is ready');
  assert.ok(cStart >= at(evs, 'b/0', 'starting'));
  assert.ok(cStart < at(evs, 'b/0', 'ready'), 'c needs b only started');
  // completed: d after setup exited 0 (and after c is ready).
  assert.equal(evs.find((e) => e.service === 'setup' && e.state === 'exited')?.code, 0);
  assert.ok(at(evs, 'd/0', 'starting') >= at(evs, 'setup/0', 'exited'));
  assert.ok(at(evs, 'd/0', 'starting') >= at(evs, 'c/0', 'ready'));
  assert.ok(at(evs, 'job/0', 'starting') >= at(evs, 'b/0', 'ready'));

  // Nothing started before its dependencies, in any order of events.
  const first = (who: string, state: string) => at(evs, who, state);
  assert.ok(evs.filter((e) => e.service === 'c' && e.state === 'starting').every((e) => Date.parse(e.t) >= first('a/1', 'ready')));

  // Placeholders: the dependencies' real endpoints (from endpoints.json), {{ is a literal brace.
  const doc = JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8'));
  const url = (s: string, rep: number) => doc.replicas.find((x: { service: string; replica: number }) => x.service === s && x.replica === rep).url as string;
  const port = (s: string, rep: number) => doc.replicas.find((x: { service: string; replica: number }) => x.service === s && x.replica === rep).port as number;
  assert.equal(url('a', 0), 'http://127.0.0.1:20000');
  assert.equal(url('a', 1), 'http://127.0.0.1:20100');
  const shown = JSON.parse(logFile(b, 'c-0.out').split('\n')[0]!);
  const cPort = port('c', 0);
  assert.ok(cPort >= 20600 && cPort <= 20699);
  assert.deepEqual(shown.argv, [
    '--port', String(cPort), '--show', '--a', `${url('a', 0)},${url('a', 1)}`, '--ap', '20000,20100', '--b', 'http://127.0.0.1:20500', '--bp', '20500', '--me', 'c/0', '--lit', '{"k": 1}',
  ]);
  assert.equal(shown.env.X_A, `${url('a', 0)},${url('a', 1)}`);
  assert.equal(shown.env.X_B, 'http://127.0.0.1:20500');
  assert.equal(shown.env.X_SELF, `127.0.0.1:${cPort}`);
  assert.equal(shown.env.PORT, String(cPort));
  assert.equal(shown.env.BERTH_SERVICE, 'c');
  assert.equal(shown.env.BERTH_REPLICA, '0');
  assert.equal(shown.env.BERTH_RUN_DIR, b.runDir);
  const dShown = JSON.parse(logFile(b, 'd-0.out').split('\n')[0]!);
  assert.deepEqual(dShown.argv, ['--show', '--c', `http://127.0.0.1:${cPort}`]);

  // --json: the endpoints document on stdout when the stack is ready, before the job ran.
  const ready = JSON.parse(r.stdout.split('\n')[0]!);
  assert.equal(ready.runDir, b.runDir);
  assert.deepEqual(
    ready.replicas.filter((x: { service: string }) => x.service !== 'job').map((x: { service: string; state: string }) => `${x.service}:${x.state}`),
    ['a:ready', 'a:ready', 'b:ready', 'setup:exited', 'c:ready', 'd:ready'],
  );
  assert.match(r.stderr, /stack ready after [\d.]+s: 6 replicas[^\n]*\n {2}a\/0 +http:\/\/127\.0\.0\.1:20000 +pid \d+/);
  assert.ok(r.stderr.indexOf('stack ready') < r.stderr.indexOf('job/0 starting'), 'stack ready is reported before the job starts');

  // After the job: dependents first (d, then c, then a and b), each wave after the last.
  assert.ok(lastAt(evs, 'd', 'exited') <= at(evs, 'c/0', 'stopping'));
  assert.ok(lastAt(evs, 'c', 'exited') <= Math.min(at(evs, 'a/0', 'stopping'), at(evs, 'b/0', 'stopping')));
  assert.match(r.stderr, /berth: job job exited with status 3; stack stopped/);
  const final = doc.replicas.map((x: { state: string }) => x.state);
  assert.deepEqual(final, ['exited', 'exited', 'exited', 'exited', 'exited', 'exited', 'exited']);
});

// Issue 32 item 17: `started` needs the dependency started, never ready. Before the fix the
// schedule ran again only on ready/completed events, so the job waited for a service that is
// never ready until the ready timeout failed the stack.
const NEVER_READY = `
services:
  slow:
    port: 20700
    command: ${svc('--port', '{port}', '--ready-after', '600000')}
    ready: http://127.0.0.1:{port}/health
    ready_timeout: 10m
  job:
    command: ${svc('--exit-after', '50')}
    depends_on: { slow: started }
    job: true
`;

test('depends_on started: the dependent starts once the dependency is started, though it is never ready', async (t) => {
  if (!requireNetns(t)) return;
  const b = box(NEVER_READY);
  t.after(() => b.cleanup());
  const r = await up(b, [], { timeoutMs: 60_000 }).result;
  assert.equal(r.code, 0, `the job ran and exited 0\n${r.stderr}`);
  const evs = events(b);
  assert.ok(at(evs, 'job/0', 'starting') >= at(evs, 'slow/0', 'starting'));
  assert.ok(!evs.some((e) => e.service === 'slow' && e.state === 'ready'), 'slow never became ready');
});
