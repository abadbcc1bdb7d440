/**
 * `berth up` failure policy and teardown: a service failing before it is ready, a ready one
 * dying after its restarts are used up, and SIGTERM to berth all stop the stack dependents
 * first (latest started first), TERM then KILL after stop_grace; the exit code says why.
 * Order is checked on events.jsonl. Each stack runs in a network namespace of its own.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { at, box, events, lastAt, svc, up } from './fixtures/up/harness.js';

const http = 'ready: http://127.0.0.1:{port}/health';

describe('berth up teardown', { concurrency: 3 }, () => {
  test('a service failing before ready: exit 70, dependents stopped first, its bundle kept', async (t) => {
    if (!requireNetns(t)) return;
    const b = box(`
services:
  base:
    range: 20000-20099
    command: ${svc('--port', '{port}', '--term-delay', '100')}
    ${http}
  mid:
    range: 20100-20199
    command: ${svc('--port', '{port}', '--term-delay', '100')}
    depends_on: [base]
    ${http}
  top:
    range: 20200-20299
    command: ${svc('--port', '{port}', '--term-delay', '100')}
    depends_on: [mid]
    ${http}
  side:
    range: 20300-20399
    command: ${svc('--port', '{port}', '--term-delay', '100')}
    depends_on: { base: started }
    ${http}
  bad:
    range: 20400-20499
    command: ${svc('--port', '{port}', '--ready-after', '60000', '--fail-after', '300', '--code', '5')}
    depends_on: { top: ready }
    ${http}
  never:
    range: 20500-20599
    command: ${svc('--port', '{port}')}
    depends_on: { bad: ready }
`);
    t.after(() => b.cleanup());
    const r = await up(b).result;
    assert.equal(r.code, 70, r.stderr);
    assert.match(r.stderr, /berth: bad\/0 failed: the service exited with status 5 before it was ready/);
    assert.match(r.stderr, /diagnostics: \S*diagnostics\/bad-0\//);
    assert.match(r.stderr, /last lines of bad\/0's stderr:\n {4}fatal: simulated failure after 300 ms/);
    const evs = events(b);
    assert.equal(evs.find((e) => e.service === 'bad' && e.state === 'failed')?.code, 70);
    assert.ok(!evs.some((e) => e.service === 'never' && e.state !== 'pending'), 'a service waiting for the failed one never starts');
    // Dependents first: top before mid before base; side (depends on base) before base.
    assert.ok(lastAt(evs, 'top', 'exited') <= at(evs, 'mid/0', 'stopping'));
    assert.ok(lastAt(evs, 'mid', 'exited') <= at(evs, 'base/0', 'stopping'));
    assert.ok(lastAt(evs, 'side', 'exited') <= at(evs, 'base/0', 'stopping'));
    // Services nothing depends on stop in the first wave (side with bad), not after top.
    assert.ok(at(evs, 'side/0', 'stopping') <= at(evs, 'top/0', 'stopping'));
    const bundle = join(b.runDir, 'diagnostics', 'bad-0');
    assert.match(readFileSync(join(bundle, 'stderr.log'), 'utf8'), /fatal: simulated failure/);
    const diag = JSON.parse(readFileSync(join(bundle, 'diagnostics.json'), 'utf8'));
    assert.equal(diag.exitCode, 70);
    assert.equal(diag.name, 'bad/0');
    // Clean replicas leave no diagnostics folder; logs stay.
    assert.equal(existsSync(join(b.runDir, 'diagnostics', 'base-0')), false);
    assert.match(readFileSync(join(b.runDir, 'logs', 'base-0.out'), 'utf8'), /listening on \d+\nterm\n/);
  });

  // Issue 32 item 19: before, only stderr was tailed, and a server that logs its fatal error
  // on stdout (coturn's "CONFIG ERROR") showed nothing.
  test('a service that says why on stdout only: the report tails its stdout, labelled', async (t) => {
    if (!requireNetns(t)) return;
    const b = box(`
services:
  quiet:
    range: 20000-20099
    command: ${svc('--port', '{port}', '--ready-after', '60000', '--lines', '2', '--exit-after', '200', '--code', '4')}
    ${http}
`);
    t.after(() => b.cleanup());
    const r = await up(b).result;
    assert.equal(r.code, 70, r.stderr);
    assert.match(r.stderr, /last lines of quiet\/0's stdout:\n {4}line 1 of 2\n {4}line 2 of 2\n/);
    assert.doesNotMatch(r.stderr, /quiet\/0's stderr:/, 'an empty stderr is not announced');
  });

  // Issue 32 item 20: before, a stack's timeout was named by the CLI's flag (--ready-timeout).
  test('a ready timeout in a stack: exit 75, the message names the stack key ready_timeout', async (t) => {
    if (!requireNetns(t)) return;
    const b = box(`
services:
  slow:
    range: 20000-20099
    command: ${svc('--port', '{port}', '--ready-after', '600000')}
    ${http}
    ready_timeout: 1s
`);
    t.after(() => b.cleanup());
    const r = await up(b).result;
    assert.equal(r.code, 75, r.stderr);
    assert.match(r.stderr, /slow\/0 failed: not ready after 1\.0s \(ready_timeout\)/);
    assert.doesNotMatch(r.stderr, /--ready-timeout/);
  });

  test('SIGTERM to berth: orderly teardown, exit 143; a service ignoring TERM is killed after stop_grace', async (t) => {
    if (!requireNetns(t)) return;
    const b = box(`
services:
  base:
    range: 20000-20099
    command: ${svc('--port', '{port}', '--term-delay', '100')}
    ${http}
  web:
    replicas: 2
    range: 20100-20199
    command: ${svc('--port', '{port}', '--term-delay', '100')}
    depends_on: [base]
    ${http}
  stubborn:
    range: 20200-20299
    command: ${svc('--port', '{port}', '--ignore-term')}
    depends_on: { web: ready }
    ${http}
    stop_grace: 400ms
`);
    t.after(() => b.cleanup());
    const run = up(b);
    await run.waitStderr(/stack ready/);
    const readyDoc = JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8'));
    assert.deepEqual(readyDoc.replicas.map((x: { state: string }) => x.state), ['ready', 'ready', 'ready', 'ready']);
    run.child.kill('SIGTERM');
    const r = await run.result;
    assert.equal(r.code, 143, r.stderr);
    assert.match(r.stderr, /berth: stopped by SIGTERM; stack torn down, exit 143/);
    const evs = events(b);
    const stub = evs.find((e) => e.service === 'stubborn' && e.state === 'exited')!;
    assert.equal(stub.signal, 'SIGKILL');
    assert.equal(stub.code, 137);
    assert.ok(at(evs, 'stubborn/0', 'exited') - at(evs, 'stubborn/0', 'stopping') >= 380, 'killed only after its stop_grace');
    assert.ok(lastAt(evs, 'stubborn', 'exited') <= at(evs, 'web/0', 'stopping'));
    assert.ok(lastAt(evs, 'web', 'exited') <= at(evs, 'base/0', 'stopping'));
    assert.match(readFileSync(join(b.runDir, 'logs', 'stubborn-0.out'), 'utf8'), /term ignored/);
    const final = JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8'));
    assert.deepEqual(final.replicas.map((x: { state: string }) => x.state), ['exited', 'exited', 'exited', 'exited']);
  });

  test('a second signal kills everything at once (no waiting out stop_grace)', async (t) => {
    if (!requireNetns(t)) return;
    const b = box(`
services:
  stubborn:
    range: 20000-20099
    command: ${svc('--port', '{port}', '--ignore-term')}
    ${http}
    stop_grace: 30s
`);
    t.after(() => b.cleanup());
    const run = up(b);
    await run.waitStderr(/stack ready/);
    run.child.kill('SIGINT');
    await run.waitStderr(/stubborn\/0 stopping/);
    const t0 = Date.now();
    run.child.kill('SIGINT');
    const r = await run.result;
    assert.ok(Date.now() - t0 < 5_000, 'killed at once');
    assert.equal(r.code, 130, r.stderr);
    assert.match(r.stderr, /SIGINT again: killing every service now/);
    const ev = events(b).find((e) => e.state === 'exited')!;
    assert.equal(ev.signal, 'SIGKILL');
  });

  test('restart on-failure: a ready service that dies is restarted on its port, then the stack fails when none are left', async (t) => {
    if (!requireNetns(t)) return;
    const b = box(`
services:
  flaky:
    range: 20000-20099
    command: ${svc('--port', '{port}', '--exit-after', '400', '--code', '9')}
    ${http}
    restart: on-failure
    restart_limit: 1
  job:
    command: ${svc('--exit-after', '20000')}
    depends_on: { flaky: ready }
    job: true
`);
    t.after(() => b.cleanup());
    const r = await up(b).result;
    assert.equal(r.code, 70, r.stderr);
    assert.match(r.stderr, /berth: flaky\/0 failed: exited with status 9 after it was ready/);
    const evs = events(b).filter((e) => e.service === 'flaky');
    const states = evs.map((e) => e.state);
    assert.deepEqual(states, ['pending', 'starting', 'owned', 'ready', 'failed', 'pending', 'starting', 'owned', 'ready', 'failed']);
    assert.match(evs[5]!.detail!, /^restart 1 of 1 in \d+ms: exited with status 9 after it was ready/);
    assert.equal(evs[1]!.port, evs[6]!.port, 'the restart keeps its port');
    assert.ok(existsSync(join(b.runDir, 'diagnostics', 'flaky-0.restart-1', 'diagnostics.json')), 'the final death keeps a bundle');
    const out = readFileSync(join(b.runDir, 'logs', 'flaky-0.out'), 'utf8');
    assert.equal(out.match(/listening on/g)?.length, 2, 'both attempts in one log');
    const job = events(b).filter((e) => e.service === 'job').map((e) => e.state);
    assert.deepEqual(job.slice(-2), ['stopping', 'exited']);
  });
});
