/**
 * `ports:` in a real stack: each replica's named set reaches it as BERTH_PORT_<NAME> and
 * through placeholders, blocks lie inside the replica's window and are disjoint across
 * replicas, endpoints.json lists every replica's ports; fd handoff passes every single
 * named port as its own fd; a bad `ports:` exits 65 with file:line. Each stack runs in a
 * network namespace of its own (berth up's harness).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { box, events, NODE, svc, up } from './fixtures/up/harness.js';

interface Shown {
  argv: string[];
  env: Record<string, string>;
}
const shown = (runDir: string, name: string): Shown =>
  JSON.parse(readFileSync(join(runDir, 'logs', `${name}.out`), 'utf8').split('\n').find((l) => l.startsWith('{'))!) as Shown;

const argOf = (s: Shown, flag: string): string => s.argv[s.argv.indexOf(flag) + 1]!;
const blocksInOrder = (reps: { ports?: Record<string, unknown> }[]): string =>
  reps.map((e) => e.ports!.dist as { first: number; last: number }).map((d) => `${d.first}-${d.last}`).join(',');

// Answers every request on every inherited socket with its LISTEN_FDNAMES name.
const FD_SERVER = `
import http from 'node:http';
const names = process.env.LISTEN_FDNAMES.split(':');
console.log(JSON.stringify({ fds: process.env.LISTEN_FDS, names: process.env.LISTEN_FDNAMES, pid: process.env.LISTEN_PID === String(process.pid) }));
names.forEach((name, i) => http.createServer((q, s) => s.end(name + '\\n')).listen({ fd: 3 + i }));
`;
// Listens on its port and on one more the kernel picks (in the ephemeral range), like
// redis --cluster-enabled's bus port.
const TWO_LISTENERS = `
import http from 'node:http';
http.createServer((q, s) => s.end('ok\\n')).listen(Number(process.argv[2]), '127.0.0.1');
const extra = http.createServer(() => {}).listen(0, '127.0.0.1', () => console.log('extra ' + extra.address().port));
`;
// The job: GET each URL it is given, print the answers, exit 0.
const FETCH_ALL = `
const out = [];
for (const url of process.argv.slice(2)) out.push(url + ' -> ' + (await (await fetch(url)).text()).trim());
console.log(out.join('\\n'));
`;

describe('berth up with ports:', { concurrency: 2 }, () => {
  test('named singles and a block per replica: env, placeholders, windows, endpoints.json', async (t) => {
    if (!requireNetns(t)) return;
    const b = box(`
bands:
  engines: { range: 20000-20399, window: 100 }
  proxy: { range: 21000-21099 }
services:
  engine:
    replicas: 3
    band: engines
    ports:
      http: 1
      grpc: 1
      dist: { block: 8 }
    command: ${svc('--port', '{ports.http}', '--show', '--grpc', '{ports.grpc}', '--range', '{ports.dist.range}', '--count', '{ports.dist.count}', '--primary', '{port}')}
    env: { X_VLLM_PORT: "{ports.dist}", X_LAST: "{ports.dist.last}" }
    ready: http://127.0.0.1:{ports.http}/health
  proxy:
    band: proxy
    depends_on: [engine]
    command: ${svc('--port', '{port}', '--show', '--https', '{engine.ports.http}', '--dists', '{engine.ports.dist.range}', '--urls', '{engine.urls}')}
    ready: http://127.0.0.1:{port}/health
  job:
    job: true
    depends_on: [proxy]
    command: ${svc('--exit-after', '100')}
`);
    t.after(() => b.cleanup());
    const r = await up(b).result;
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8')) as {
      replicas: { service: string; replica: number; port: number; ports?: Record<string, number | { first: number; last: number; count: number }> }[];
    };
    const engines = doc.replicas.filter((x) => x.service === 'engine').sort((x, y) => x.replica - y.replica);
    assert.equal(engines.length, 3);
    const blocks: [number, number][] = [];
    for (const e of engines) {
      const s = shown(b.runDir, `engine-${e.replica}`);
      const lo = 20000 + 100 * e.replica;
      const ports = e.ports!;
      const http = ports.http as number;
      const grpc = ports.grpc as number;
      const dist = ports.dist as { first: number; last: number; count: number };
      assert.equal(e.port, http, 'the first entry is the primary port');
      assert.deepEqual(Object.keys(ports), ['http', 'grpc', 'dist'], 'in ports: order');
      for (const p of [http, grpc, dist.first, dist.last]) assert.ok(p >= lo && p < lo + 100, `port ${p} of engine/${e.replica} is inside its window ${lo}-${lo + 99}`);
      assert.equal(dist.count, 8);
      assert.equal(dist.last - dist.first, 7, 'a block is contiguous');
      assert.ok(http < dist.first || http > dist.last, 'the singles are not inside the block');
      assert.ok(grpc < dist.first || grpc > dist.last);
      assert.notEqual(http, grpc);
      blocks.push([dist.first, dist.last]);
      // The same ports reach the service as variables and through placeholders.
      assert.equal(s.env.BERTH_PORT_HTTP, String(http));
      assert.equal(s.env.BERTH_PORT_GRPC, String(grpc));
      assert.equal(s.env.BERTH_PORT_DIST, String(dist.first));
      assert.equal(s.env.BERTH_PORT_DIST_FIRST, String(dist.first));
      assert.equal(s.env.BERTH_PORT_DIST_LAST, String(dist.last));
      assert.equal(s.env.BERTH_PORT_DIST_COUNT, '8');
      assert.equal(argOf(s, '--port'), String(http));
      assert.equal(argOf(s, '--primary'), String(http));
      assert.equal(argOf(s, '--grpc'), String(grpc));
      assert.equal(argOf(s, '--range'), `${dist.first}-${dist.last}`);
      assert.equal(argOf(s, '--count'), '8');
      assert.equal(s.env.X_VLLM_PORT, String(dist.first));
      assert.equal(s.env.X_LAST, String(dist.last));
    }
    blocks.sort((x, y) => x[0] - y[0]);
    for (let i = 1; i < blocks.length; i++) assert.ok(blocks[i]![0] > blocks[i - 1]![1], `blocks ${JSON.stringify(blocks)} are disjoint`);
    // A dependency's named ports, every replica's ({engine.port.NAME} would be refused: 3 replicas).
    const p = shown(b.runDir, 'proxy-0');
    assert.equal(argOf(p, '--https'), engines.map((e) => e.ports!.http).join(','));
    assert.equal(argOf(p, '--dists'), blocksInOrder(engines));
    assert.equal(argOf(p, '--urls'), engines.map((e) => `http://127.0.0.1:${e.port}`).join(','));
    // A service without ports: has its one port as before (no BERTH_PORT_PORT).
    const proxy = doc.replicas.find((x) => x.service === 'proxy')!;
    assert.deepEqual(proxy.ports, { port: proxy.port });
    assert.equal(p.env.BERTH_PORT_PORT, undefined);
    assert.ok(events(b).some((e) => e.service === 'engine' && e.state === 'ready'));
  });

  test('fd handoff of two named ports: LISTEN_FDS=2, LISTEN_FDNAMES, both served', async (t) => {
    if (!requireNetns(t)) return;
    const b = box('');
    t.after(() => b.cleanup());
    writeFileSync(join(b.dir, 'fd-server.mjs'), FD_SERVER);
    writeFileSync(join(b.dir, 'fetch-all.mjs'), FETCH_ALL);
    writeFileSync(
      b.stack,
      `
services:
  api:
    range: 22000-22099
    handoff: fd
    ports: { http: 1, admin: 1, spare: { block: 4 } }
    command: [${JSON.stringify(NODE)}, fd-server.mjs]
    ready: http://127.0.0.1:{ports.admin}/
  job:
    job: true
    depends_on: [api]
    command: [${JSON.stringify(NODE)}, fetch-all.mjs, "http://127.0.0.1:{api.port.http}/", "http://127.0.0.1:{api.port.admin}/"]
`,
    );
    const r = await up(b).result;
    assert.equal(r.code, 0, r.stderr);
    const info = JSON.parse(readFileSync(join(b.runDir, 'logs', 'api-0.out'), 'utf8').split('\n')[0]!) as { fds: string; names: string; pid: boolean };
    assert.deepEqual(info, { fds: '2', names: 'http:admin', pid: true }, 'blocks are never fds');
    const doc = JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8')) as { replicas: { service: string; ports?: Record<string, number> }[] };
    const ports = doc.replicas.find((x) => x.service === 'api')!.ports!;
    assert.match(r.stdout, new RegExp(`http://127.0.0.1:${ports.http}/ -> http\\n`));
    assert.match(r.stdout, new RegExp(`http://127.0.0.1:${ports.admin}/ -> admin`));
  });

  test('the listener audit: a port outside the set is in endpoints.json and events.jsonl, and said once', async (t) => {
    if (!requireNetns(t)) return;
    const b = box('');
    t.after(() => b.cleanup());
    writeFileSync(join(b.dir, 'two.mjs'), TWO_LISTENERS);
    writeFileSync(
      b.stack,
      `
services:
  cache:
    range: 23000-23099
    ports: { client: 1 }
    command: [${JSON.stringify(NODE)}, two.mjs, "{ports.client}"]
    ready: http://127.0.0.1:{ports.client}/
  job:
    job: true
    depends_on: [cache]
    command: ${svc('--exit-after', '3000')}
`,
    );
    const r = await up(b).result;
    assert.equal(r.code, 0, r.stderr);
    const extra = Number(/extra (\d+)/.exec(readFileSync(join(b.runDir, 'logs', 'cache-0.out'), 'utf8'))![1]);
    const doc = JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8')) as {
      replicas: { service: string; unexpectedListeners?: { port: number; ephemeral: boolean; message: string }[] }[];
    };
    const found = doc.replicas.find((x) => x.service === 'cache')!.unexpectedListeners ?? [];
    assert.deepEqual(found.map((f) => [f.port, f.ephemeral]), [[extra, true]], JSON.stringify(doc));
    assert.equal(doc.replicas.find((x) => x.service === 'job')!.unexpectedListeners, undefined);
    const ev = events(b).find((e) => e.service === 'cache' && e.detail?.includes(String(extra)));
    assert.ok(ev, 'events.jsonl has the finding with detail');
    const said = r.stderr.split('\n').filter((l) => l.includes(`${extra}`) && l.includes('warning'));
    assert.equal(said.length, 1, `said once on stderr:\n${r.stderr}`);
  });

  test('a bad ports: is refused before anything starts: exit 65, file:line', async (t) => {
    if (!requireNetns(t)) return;
    const b = box(`
bands:
  engines: { range: 20000-20399, window: 100 }
services:
  engine:
    band: engines
    ports:
      http: 1
      dist: { block: 120 }
    command: ${svc('--port', '{ports.http}')}
  client:
    job: true
    depends_on: [engine]
    command: ${svc('--x', '{engine.port.grpc}')}
`);
    t.after(() => b.cleanup());
    const r = await up(b).result;
    assert.equal(r.code, 65, r.stderr);
    assert.match(r.stderr, /stack\.yaml:7: service "engine": ports: each replica takes its ports from its window of band "engines" \(100 ports\), but its 2 entries need 121 ports/);
    assert.match(r.stderr, /stack\.yaml:14: service "client": command\[3\] uses \{engine\.port\.grpc\}, but "engine"'s ports are http, dist/);
  });
});
