/**
 * Strays a service cannot move (issue 21 item 9): a program that opens listeners of its own in
 * the ephemeral range (a Jupyter kernel's six ZMQ ports, bound to port 0) is warned about once,
 * in one message naming every port once, and never again through the status lines; with
 * `strays: ephemeral` they are recorded (endpoints.json, events.jsonl) but not warned about.
 * `strays:` values are checked at load (65, file:line). Real sockets, each stack in a network
 * namespace of its own.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { BerthError } from '../src/errors.js';
import { parseStack } from '../src/stack/index.js';
import { requireNetns } from './helpers/netns.js';
import { box, events, NODE, svc, up } from './fixtures/up/harness.js';

// Listens on its port and on six more the kernel picks (port 0: the ephemeral range).
const KERNEL = `
import http from 'node:http';
http.createServer((q, s) => s.end('ok\\n')).listen(Number(process.argv[2]), '127.0.0.1');
const ports = [];
for (let i = 0; i < 6; i++) {
  const x = http.createServer(() => {}).listen(0, '127.0.0.1', () => {
    ports.push(x.address().port);
    if (ports.length === 6) console.log('extra ' + ports.join(','));
  });
}
`;

const stack = (strays: string) => `
services:
  lab:
    range: 23000-23099
${strays}    command: [${JSON.stringify(NODE)}, kernel.mjs, "{port}"]
    ready: http://127.0.0.1:{port}/
  job:
    job: true
    depends_on: [lab]
    command: ${svc('--exit-after', '2500')}
`;

interface Doc {
  replicas: { service: string; unexpectedListeners?: { port: number; ephemeral: boolean; acknowledged?: boolean; message: string }[] }[];
}

describe('strays', { concurrency: 2 }, () => {
  test('six listeners in the ephemeral range: one warning naming each port once, and nothing printed twice', async (t) => {
    if (!requireNetns(t)) return;
    const b = box(stack(''));
    t.after(() => b.cleanup());
    writeFileSync(join(b.dir, 'kernel.mjs'), KERNEL);
    const r = await up(b).result;
    assert.equal(r.code, 0, r.stderr);
    const extra = /extra ([\d,]+)/.exec(readFileSync(join(b.runDir, 'logs', 'lab-0.out'), 'utf8'))![1]!.split(',').map(Number);
    const said = r.stderr.split('\n').filter((l) => extra.some((p) => l.includes(String(p))));
    assert.equal(said.length, 1, `one line names them, once:\n${r.stderr}`);
    assert.match(said[0]!, /^berth: warning: lab\/0 listens on 6 ports outside its ports \(port 230\d\d\): .* inside the unreserved ephemeral range \d+-\d+, where any outgoing connection may take them: put them in a block \(ports: NAME: \{ block: N \} in the stack file\) or set the program's flags for them; if the program picks them itself and cannot be told which, acknowledge them \(strays: ephemeral in the stack file\)$/);
    for (const p of extra) assert.equal(said[0]!.split(String(p)).length, 2, `${p} once in ${said[0]}`);
    assert.ok(said[0]!.length < 500, `a short line (${said[0]!.length} chars)`);
    // The record has every one, the status lines none.
    const doc = JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8')) as Doc;
    assert.deepEqual(doc.replicas.find((x) => x.service === 'lab')!.unexpectedListeners!.map((f) => f.port).sort(), [...extra].sort());
    assert.ok(events(b).some((e) => e.service === 'lab' && extra.every((p) => e.detail?.includes(String(p)))), 'events.jsonl has the finding');
  });

  test('strays: ephemeral: recorded (endpoints.json, events.jsonl), not warned about', async (t) => {
    if (!requireNetns(t)) return;
    const b = box(stack('    strays: ephemeral\n'));
    t.after(() => b.cleanup());
    writeFileSync(join(b.dir, 'kernel.mjs'), KERNEL);
    const r = await up(b).result;
    assert.equal(r.code, 0, r.stderr);
    const extra = /extra ([\d,]+)/.exec(readFileSync(join(b.runDir, 'logs', 'lab-0.out'), 'utf8'))![1]!.split(',').map(Number);
    assert.doesNotMatch(r.stderr, /warning/, r.stderr);
    for (const p of extra) assert.ok(!r.stderr.includes(String(p)), `${p} not on stderr`);
    const doc = JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8')) as Doc;
    const found = doc.replicas.find((x) => x.service === 'lab')!.unexpectedListeners!;
    assert.equal(found.length, 6);
    assert.ok(found.every((f) => f.acknowledged === true && f.ephemeral), JSON.stringify(found));
    assert.ok(events(b).some((e) => e.service === 'lab' && /acknowledged by strays/.test(e.detail ?? '')), 'events.jsonl says they were acknowledged');
  });
});

test('strays: values checked at load: 65 with file:line and what to write', () => {
  const ok = (v: string) => parseStack(`services:\n  a:\n    command: [x, "{port}"]\n    strays: ${v}\n`, 's.yaml', '.').services[0]!.strays;
  assert.deepEqual(ok('ephemeral'), [{ kind: 'ephemeral' }]);
  assert.deepEqual(ok('all'), [{ kind: 'all' }]);
  assert.deepEqual(ok('[ephemeral, 8265, 9000-9010]'), [{ kind: 'ephemeral' }, { kind: 'ports', lo: 8265, hi: 8265 }, { kind: 'ports', lo: 9000, hi: 9010 }]);
  assert.deepEqual(parseStack('services:\n  a:\n    command: [x]\n', 's.yaml', '.').services[0]!.strays, []);
  for (const [v, re] of [
    ['ephemral', /s\.yaml:4: service "a": strays: "ephemral" is not ephemeral, all, a port or a range LO-HI \(did you mean "ephemeral"\?\); write strays: ephemeral/],
    ['[ephemeral, 9010-9000]', /s\.yaml:4: service "a": strays: "9010-9000" is not a port \(1-65535\) or a range LO-HI with LO <= HI/],
    ['[]', /s\.yaml:4: service "a": strays must be .*found an empty list/],
    ['{ a: 1 }', /s\.yaml:4: service "a": strays: found a mapping/],
  ] as const) {
    assert.throws(() => ok(v), (e: unknown) => e instanceof BerthError && e.exitCode === 65 && re.test(e.message), v);
  }
});
