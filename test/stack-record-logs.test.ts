/**
 * `berth up` output and run directory: logs complete after an abrupt end, a job's output
 * passing through byte for byte, --follow's prefixed lines, and endpoints.json being valid
 * JSON at every moment (read in a tight loop while the stack changes state).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { box, events, logFile, svc, up } from './fixtures/up/harness.js';

const LINES = 50_000;
const expected = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1} of ${n}\n`).join('');

describe('berth up logs', { concurrency: 2 }, () => {
  test('logs are complete after an abrupt end; the job passes through unchanged', async (t) => {
    if (!requireNetns(t)) return;
    const b = box(`
services:
  noisy:
    range: 20000-20099
    command: ${svc('--port', '{port}', '--lines', String(LINES))}
    ready: http://127.0.0.1:{port}/health
  job:
    command: ${svc('--lines', String(LINES), '--then-kill')}
    depends_on: [noisy]
    job: true
`);
    t.after(() => b.cleanup());
    const r = await up(b, [], { timeoutMs: 60_000 }).result;
    // The job killed itself with SIGKILL: the stack's status is 128+9.
    assert.equal(r.code, 137, r.stderr);
    assert.match(r.stderr, /berth: job job was killed by SIGKILL/);
    const all = expected(LINES);
    assert.equal(logFile(b, 'job-0.out'), all, 'the job\'s log has every line');
    assert.equal(r.stdout, all, 'and so has berth\'s stdout');
    assert.equal(logFile(b, 'noisy-0.out'), `${all}listening on ${events(b).find((e) => e.service === 'noisy')!.port}\nterm\n`);
  });

  test('endpoints.json is valid JSON at every point; --follow prefixes lines', async (t) => {
    if (!requireNetns(t)) return;
    const b = box(`
services:
  a:
    replicas: 3
    range: 20000-20099
    command: ${svc('--port', '{port}', '--ready-after', '200', '--show')}
    ready: http://127.0.0.1:{port}/health
  b:
    replicas: 3
    range: 20100-20199
    command: ${svc('--port', '{port}', '--term-delay', '50')}
    depends_on: [a]
    ready: http://127.0.0.1:{port}/health
  job:
    command: ${svc('--exit-after', '300')}
    depends_on: [b]
    job: true
`);
    t.after(() => b.cleanup());
    const run = up(b, ['--follow']);
    let reads = 0;
    let missing = 0;
    const states = new Set<string>();
    const bad: string[] = [];
    let done = false;
    void run.result.then(() => (done = true));
    const file = join(b.runDir, 'endpoints.json');
    while (!done) {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch {
        missing++;
        await new Promise((r) => setImmediate(r));
        continue;
      }
      reads++;
      try {
        const doc = JSON.parse(text);
        for (const x of doc.replicas) states.add(x.state);
      } catch {
        bad.push(text);
      }
      await new Promise((r) => setImmediate(r));
    }
    const r = await run.result;
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(bad, [], 'every read parsed');
    assert.ok(reads > 100, `read ${reads} times`);
    for (const s of ['pending', 'ready', 'exited']) assert.ok(states.has(s), `saw ${s} (saw ${[...states].join(', ')})`);
    // every line of events.jsonl is a whole JSON object
    const evs = events(b);
    assert.ok(evs.length >= 7 * 4);
    // --follow: other services' output on stderr, prefixed; the job's stays unprefixed on stdout.
    assert.match(r.stderr, /^a\/0 \| \{"argv":/m);
    assert.match(r.stderr, /^b\/2 \| listening on \d+$/m);
    assert.match(r.stderr, /^b\/1 \| term$/m);
    assert.doesNotMatch(r.stderr, /^job\/0 \|/m);
  });
});
