/**
 * Restarts keep their ports (issue 10, item 4): an engine replica SIGKILLed while a proxy
 * that was given {engine.urls} sends it traffic comes back on the same port (its leases
 * kept, its single port held again during the pause), and the proxy gets answers from the
 * new process at the old address (the old failure: the replica moved to another port and
 * the proxy kept a dead address). A restart whose port someone took meanwhile fails with 69
 * naming the taker instead of moving. Each stack runs in a network namespace of its own.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { box, events, NODE, up } from './fixtures/up/harness.js';

// An engine: answers "engine PID PORT" on every path (/health too).
const ENGINE = `
import http from 'node:http';
const port = Number(process.argv[2]);
http.createServer((q, s) => s.end('engine ' + process.pid + ' ' + port + '\\n')).listen(port, '127.0.0.1', () => console.log('listening on ' + port));
`;
// A proxy: round-robin over the backends it was given once, at start; 502 when one fails.
const PROXY = `
import http from 'node:http';
const backends = process.argv[3].split(',');
let next = 0;
http.createServer(async (q, s) => {
  const b = backends[next++ % backends.length];
  try {
    const r = await fetch(b + q.url);
    s.end(await r.text());
  } catch (e) {
    s.writeHead(502);
    s.end('bad gateway: ' + b + '\\n');
  }
}).listen(Number(process.argv[2]), '127.0.0.1');
`;
// The job: learns the engines through the proxy, SIGKILLs one, waits for a new process to
// answer at the killed one's port, then checks that the proxy keeps getting answers.
const CHECK = `
const proxy = process.argv[2];
const get = async () => { try { const r = await fetch(proxy + '/'); return r.ok ? (await r.text()).trim().split(' ') : undefined; } catch { return undefined; } };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const seen = new Map();
for (let i = 0; i < 4; i++) { const a = await get(); if (a) seen.set(a[1], a[2]); }
const [victim, port] = [...seen][0];
process.kill(Number(victim), 'SIGKILL');
let failed = 0, back;
for (const t0 = Date.now(); Date.now() - t0 < 40000 && !back; await sleep(100)) {
  const a = await get();
  if (!a) failed++;
  else if (!seen.has(a[1])) back = { pid: a[1], port: a[2] };
}
let after = 0, afterFailed = 0;
for (let i = 0; i < 20; i++) { if (await get()) after++; else afterFailed++; }
console.log(JSON.stringify({ engines: Object.fromEntries(seen), victim, port, back, failedDuringRestart: failed, after, afterFailed }));
`;

// An engine that, on GET /close, stops listening, then exits 1 a second later.
const CLOSING_ENGINE = `
import http from 'node:http';
const port = Number(process.argv[2]);
const server = http.createServer((q, s) => {
  s.end('engine ' + process.pid + '\\n');
  if (q.url === '/close') { server.close(); server.closeAllConnections(); setTimeout(() => process.exit(1), 1000); }
}).listen(port, '127.0.0.1');
`;
// A squatter: asks the engine to close, then takes its port the moment it is free, and keeps it.
const SQUATTER = `
import net from 'node:net';
const port = Number(process.argv[2]);
await fetch('http://127.0.0.1:' + port + '/close').catch(() => {});
const take = () => net.createServer().on('error', () => setTimeout(take, 5)).listen(port, '127.0.0.1', () => console.log('squatter took ' + port));
take();
setInterval(() => {}, 1 << 30);
`;

test('a restart whose port was taken fails with 69 naming the taker (it never moves)', async (t) => {
  if (!requireNetns(t)) return;
  const b = box('');
  t.after(() => b.cleanup());
  for (const [f, text] of [['engine.mjs', CLOSING_ENGINE], ['squatter.mjs', SQUATTER]] as const) writeFileSync(join(b.dir, f), text);
  const node = JSON.stringify(NODE);
  writeFileSync(
    b.stack,
    `
services:
  engine:
    range: 20000-20099
    ports: { http: 1 }
    command: [${node}, engine.mjs, "{ports.http}"]
    ready: http://127.0.0.1:{ports.http}/health
    restart: on-failure
    restart_limit: 1
  squatter:
    job: true
    depends_on: [engine]
    command: [${node}, squatter.mjs, "{engine.port.http}"]
`,
  );
  const r = await up(b, [], { timeoutMs: 60_000 }).result;
  assert.equal(r.code, 69, r.stderr);
  const port = Number(/squatter took (\d+)/.exec(r.stdout)?.[1]);
  assert.ok(port >= 20000 && port <= 20099, r.stdout);
  assert.match(r.stderr, new RegExp(`engine/0 failed: restart: cannot come back on its ports: cannot hold port ${port} again \\(EADDRINUSE\\): it is in use: .*squatter`));
  const evs = events(b).filter((e) => e.service === 'engine');
  assert.deepEqual([...new Set(evs.map((e) => e.port))], [port], 'every event of the engine names its one port');
  assert.equal(evs.filter((e) => e.state === 'starting').length, 1, 'no second start elsewhere');
});

test('a SIGKILLed engine restarts on the same port and its proxy keeps getting answers', async (t) => {
  if (!requireNetns(t)) return;
  const b = box('');
  t.after(() => b.cleanup());
  for (const [f, text] of [['engine.mjs', ENGINE], ['proxy.mjs', PROXY], ['check.mjs', CHECK]] as const) writeFileSync(join(b.dir, f), text);
  const node = JSON.stringify(NODE);
  writeFileSync(
    b.stack,
    `
bands:
  engines: { range: 20000-20199, window: 100 }
  proxy: { range: 21000-21099 }
services:
  engine:
    replicas: 2
    band: engines
    ports: { http: 1, dist: { block: 4 } }
    command: [${node}, engine.mjs, "{ports.http}"]
    ready: http://127.0.0.1:{ports.http}/health
    restart: on-failure
    restart_limit: 2
  proxy:
    band: proxy
    depends_on: [engine]
    command: [${node}, proxy.mjs, "{port}", "{engine.urls}"]
    ready: tcp
  check:
    job: true
    depends_on: [proxy]
    command: [${node}, check.mjs, "{proxy.url}"]
`,
  );
  const r = await up(b, [], { timeoutMs: 90_000 }).result;
  assert.equal(r.code, 0, r.stderr);
  const res = JSON.parse(r.stdout.trim().split('\n').pop()!) as {
    engines: Record<string, string>;
    victim: string;
    port: string;
    back?: { pid: string; port: string };
    after: number;
    afterFailed: number;
  };
  assert.equal(Object.keys(res.engines).length, 2, `both engines answered through the proxy: ${r.stdout}`);
  assert.ok(res.back, `a new engine process answered through the proxy after the kill: ${r.stdout}\n${r.stderr}`);
  assert.equal(res.back.port, res.port, 'the restarted engine listens on the port it had');
  assert.equal(res.after, 20, `the proxy got every answer after the restart: ${r.stdout}`);
  // The record agrees: the replica failed, restarted, and every event of it names one port.
  const evs = events(b).filter((e) => e.service === 'engine');
  const killed = evs.find((e) => e.pid === Number(res.victim))!;
  const mine = evs.filter((e) => e.replica === killed.replica);
  assert.deepEqual([...new Set(mine.map((e) => e.port))], [Number(res.port)]);
  const states = mine.map((e) => e.state);
  assert.deepEqual(states.slice(0, 6), ['pending', 'starting', 'owned', 'ready', 'failed', 'pending']);
  assert.ok(states.lastIndexOf('ready') > 4, `ready again after the restart: ${states.join(' ')}`);
  assert.match(mine[4]!.detail!, /was killed by SIGKILL after it was ready/);
  assert.doesNotMatch(r.stderr, /restarted on port|no longer free/);
  const doc = JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8')) as { replicas: { service: string; replica: number; port: number }[] };
  assert.equal(doc.replicas.find((x) => x.service === 'engine' && x.replica === killed.replica)!.port, Number(res.port));
});
