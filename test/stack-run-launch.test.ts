/**
 * What `berth up` takes from launch(): the stack's placeholders are filled once (`{{port}`
 * reaches the service as a literal `{port}`, also in a ready probe), services without a
 * port are launches too, and logs/<service>-<replica>.out|.err are the only logs while a
 * stack runs: a failed attempt's bundle gets a copy of that attempt's part of them.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { box, events, logFile, svc, up } from './fixtures/up/harness.js';

describe('berth up and launch()', { concurrency: 2 }, () => {
  test('{{port} is a literal {port} for the service, its probe and a portless job', async (t) => {
    if (!requireNetns(t)) return;
    const b = box(`
services:
  web:
    range: 20000-20099
    command: ${svc('--port', '{port}', '--show', '--literal', '{{port}/{{host}', 'at {port}')}
    env: { X_LIT: "{{port}" }
    ready: 'cmd:test "{{port}" != "{port}"'
    ready_timeout: 5s
  job:
    command: ${svc('--show', '--exit-after', '0', '--literal', '{{port}', '{{name}')}
    depends_on: [web]
    job: true
`);
    t.after(() => b.cleanup());
    const r = await up(b).result;
    assert.equal(r.code, 0, r.stderr);
    const port = events(b).find((e) => e.service === 'web' && e.port !== undefined)!.port!;
    const web = JSON.parse(logFile(b, 'web-0.out').split('\n')[0]!);
    assert.deepEqual(web.argv.slice(3), ['--literal', '{port}/{host}', `at ${port}`]);
    assert.equal(web.env.X_LIT, '{port}');
    const job = JSON.parse(r.stdout.split('\n')[0]!);
    assert.deepEqual(job.argv.slice(3), ['--literal', '{port}', '{name}']);
    assert.equal(job.env.PORT, undefined, 'a portless job gets no port');
    assert.equal(job.env.BERTH_NAME, 'job/0');
    // A clean run: the logs are in logs/, and no diagnostics folder is left behind.
    assert.equal(logFile(b, 'job-0.out'), r.stdout);
    assert.ok(!existsSync(join(b.runDir, 'diagnostics')));
  });

  test("a restarted replica's attempts share its log; each bundle holds its own attempt's output", async (t) => {
    if (!requireNetns(t)) return;
    const b = box(`
services:
  flaky:
    range: 20000-20099
    command: ${svc('--port', '{port}', '--show', '--ready-after', '60000', '--fail-after', '200', '--code', '5')}
    ready: http://127.0.0.1:{port}/health
    restart: on-failure
    restart_limit: 1
  job:
    command: ${svc('--exit-after', '0')}
    depends_on: [flaky]
    job: true
`);
    t.after(() => b.cleanup());
    const r = await up(b).result;
    assert.equal(r.code, 70, r.stderr);
    const log = join(b.runDir, 'logs', 'flaky-0.out');
    const whole = readFileSync(log, 'utf8');
    // Each attempt printed its argv/env line (BERTH_RUN_ID differs), then "listening on".
    const lines = whole.trimEnd().split('\n');
    const shows = lines.filter((l) => l.startsWith('{'));
    assert.equal(shows.length, 2, whole);
    const ids = shows.map((l) => JSON.parse(l).env.BERTH_RUN_ID);
    assert.notEqual(ids[0], ids[1]);
    const first = join(b.runDir, 'diagnostics', 'flaky-0');
    const second = join(b.runDir, 'diagnostics', 'flaky-0.restart-1');
    const a = readFileSync(join(first, 'stdout.log'), 'utf8');
    const c = readFileSync(join(second, 'stdout.log'), 'utf8');
    assert.equal(a + c, whole, 'the two copies are the log, split where the restart began');
    assert.ok(a.includes(ids[0]) && !a.includes(ids[1]));
    assert.match(readFileSync(join(second, 'stderr.log'), 'utf8'), /^fatal: simulated failure after 200 ms/);
    const d1 = JSON.parse(readFileSync(join(first, 'diagnostics.json'), 'utf8'));
    const d2 = JSON.parse(readFileSync(join(second, 'diagnostics.json'), 'utf8'));
    assert.deepEqual([d1.logs.stdout.log, d1.logs.stdout.offset], [log, 0]);
    assert.deepEqual([d2.logs.stdout.log, d2.logs.stdout.offset], [log, Buffer.byteLength(a)]);
  });
});
