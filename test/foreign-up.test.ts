/**
 * Foreign listeners against `berth up`: a python3 server outside the stack (started with
 * nsenter in the stack's own network namespace) joins a ready replica's port through
 * SO_REUSEPORT. Without strict: one warning, `foreign` in endpoints.json, the finding in
 * events.jsonl, the stack keeps running; with `strict: true` (the stack's or the service's)
 * the replica fails and the stack ends with 70 naming it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { box, events, up } from './fixtures/up/harness.js';
import { realPython, SERVICES } from './fixtures/services/launch-harness.js';

const SRV = join(SERVICES, 'reuseport.py');

const stack = (top: string, own: string) => `${top}
services:
  srv:
    range: 23000-23099
    replicas: 2
${own}    command: [${JSON.stringify(realPython())}, -S, ${JSON.stringify(SRV)}, 127.0.0.1, "{port}"]
    ready: tcp
`;

/** The stranger: the same server, in berth's network namespace but outside its tree. */
function stranger(berthPid: number, port: number) {
  const c = spawn('nsenter', [`--net=/proc/${berthPid}/ns/net`, '--', realPython(), '-S', SRV, '127.0.0.1', String(port)], { stdio: 'ignore' });
  return c;
}

/** endpoints.json once `ok` holds of it (its writes are batched), up to 30 s. */
async function endpointsWhen(runDir: string, ok: (d: Doc) => boolean): Promise<Doc> {
  const until = Date.now() + 30_000;
  for (;;) {
    const d = JSON.parse(readFileSync(join(runDir, 'endpoints.json'), 'utf8')) as Doc;
    if (ok(d) || Date.now() > until) return d;
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Doc {
  replicas: { service: string; replica: number; port: number; foreign?: { pid: number; port: number; reuseport: boolean; message: string }[] }[];
}

describe('foreign listeners in a stack', { concurrency: 2 }, () => {
  test('not strict: one warning naming the stranger, foreign in endpoints.json and events.jsonl, the stack runs on', async (t) => {
    if (!requireNetns(t)) return;
    const b = box(stack('', ''));
    t.after(() => b.cleanup());
    const u = up(b, [], { timeoutMs: 90_000 });
    t.after(() => u.child.kill('SIGKILL'));
    await u.waitStderr(/stack ready/, 60_000);
    const doc0 = JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8')) as Doc;
    const port = doc0.replicas.find((r) => r.replica === 1)!.port;
    const s = stranger(u.child.pid!, port);
    t.after(() => s.kill());
    await u.waitStderr(/outside the service's process tree/, 60_000);
    const doc = await endpointsWhen(b.runDir, (d) => d.replicas.some((r) => r.foreign !== undefined));
    const rec = doc.replicas.find((r) => r.replica === 1)!;
    assert.equal(rec.foreign?.length, 1, JSON.stringify(doc));
    assert.equal(rec.foreign![0]!.pid, s.pid);
    assert.equal(rec.foreign![0]!.reuseport, true);
    assert.equal(doc.replicas.find((r) => r.replica === 0)!.foreign, undefined, 'replica 0 has none');
    assert.ok(events(b).some((e) => e.service === 'srv' && e.replica === 1 && e.detail?.startsWith(`foreign listener on port ${port}: pid ${s.pid} `)), 'events.jsonl has it');
    u.child.kill('SIGTERM');
    const r = await u.result;
    assert.equal(r.stderr.match(/outside the service's process tree/g)?.length, 1, `said once:\n${r.stderr}`);
    assert.match(r.stderr, new RegExp(`srv/1: port ${port} has a listener outside the service's process tree: pid ${s.pid} .*shares the listener through SO_REUSEPORT`));
    assert.equal(r.code, 143, r.stderr);
  });

  for (const [where, top, own] of [['the stack', 'strict: true', ''], ['the service', '', '    strict: true\n']] as const) {
    test(`strict: true on ${where}: the replica fails, the stack ends with 70 naming the stranger`, async (t) => {
      if (!requireNetns(t)) return;
      const b = box(stack(top, own));
      t.after(() => b.cleanup());
      const u = up(b, [], { timeoutMs: 90_000 });
      t.after(() => u.child.kill('SIGKILL'));
      await u.waitStderr(/stack ready/, 60_000);
      const port = (JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8')) as Doc).replicas.find((r) => r.replica === 0)!.port;
      const s = stranger(u.child.pid!, port);
      t.after(() => s.kill());
      const r = await u.result;
      assert.equal(r.code, 70, r.stderr);
      assert.match(r.stderr, new RegExp(`berth: srv/0 failed: port ${port} has a listener outside the service's process tree: pid ${s.pid} .*; failing the service \\(strict\\)`));
    });
  }
});
