import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { tsNode } from './helpers/netns.js';

/*
 * The demo's services by hand (no berth up): what they print, how they fail, and that the
 * proxy spreads a batch over the engines. Ports are leased with `berth port` for this test
 * process, the way a job script would, and released at the end.
 */

const DEMO = 'examples/demo';
const children: ChildProcess[] = [];
let ports: number[] = [];

before(() => {
  const argv = tsNode('src/cli/main.ts', 'port', '--range', '27600-27699', '--count', '5', '--owner', String(process.pid), '--name', 'stack-demo-test');
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
  assert.equal(r.status, 0, `berth port failed: ${r.stderr}`);
  ports = r.stdout.trim().split('\n').map(Number);
  assert.equal(ports.length, 5);
});

after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  const argv = tsNode('src/cli/main.ts', 'release', '--owner', String(process.pid));
  spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
});

interface Running {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  /** Resolves with stdout once it matches. */
  waitFor(re: RegExp, ms?: number): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(script: string, args: string[], env: NodeJS.ProcessEnv = {}): Running {
  const child = spawn(process.execPath, [script, ...args], { cwd: DEMO, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  const waiters: (() => void)[] = [];
  child.stdout!.setEncoding('utf8').on('data', (d) => {
    out += d;
    for (const w of waiters) w();
  });
  child.stderr!.setEncoding('utf8').on('data', (d) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  return {
    child,
    out: () => out,
    err: () => err,
    exited,
    waitFor(re, ms = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (re.test(out)) {
            clearTimeout(timer);
            resolve(out);
          }
        };
        const timer = setTimeout(() => reject(new Error(`${script}: no ${re} within ${ms} ms; stdout: ${out} stderr: ${err}`)), ms);
        waiters.push(check);
        void exited.then(() => {
          if (!re.test(out)) {
            clearTimeout(timer);
            reject(new Error(`${script} exited before printing ${re}; stdout: ${out} stderr: ${err}`));
          }
        });
        check();
      });
    },
  };
}

async function get(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function untilHealthy(url: string, ms = 10_000): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    const r = await get(url).catch(() => ({ status: 0 }));
    if (r.status === 200) return Date.now() - t0;
    if (Date.now() - t0 > ms) throw new Error(`${url} not healthy within ${ms} ms (last status ${r.status})`);
    await new Promise((res) => setTimeout(res, 25));
  }
}

test('engine: listens at once, /health is 503 while loading, then 200; SIGTERM exits 0', async () => {
  const port = ports[0]!;
  const e = start('engine.js', ['--port', String(port), '--replica', '0', '--load-ms', '600'], { MODEL: 'tiny-test' });
  await e.waitFor(/loading model "tiny-test"/);
  assert.match(e.out(), new RegExp(`^\\[engine/0\\] listening on 127\\.0\\.0\\.1:${port} \\(pid ${e.child.pid}\\); /health is 503 until the model is loaded\\n`));
  const loading = await get(`http://127.0.0.1:${port}/health`);
  assert.deepEqual(loading, { status: 503, body: { status: 'loading', engine: 'engine/0', model: 'tiny-test' } });
  const early = await fetch(`http://127.0.0.1:${port}/generate`, { method: 'POST', body: '{}' });
  assert.equal(early.status, 503);
  await untilHealthy(`http://127.0.0.1:${port}/health`);
  assert.match(e.out(), /\[engine\/0\] model "tiny-test" loaded in \d+ ms; serving\n/);
  const gen = await fetch(`http://127.0.0.1:${port}/generate`, { method: 'POST', body: JSON.stringify({ prompt: 'hi' }) });
  assert.equal(gen.status, 200);
  assert.deepEqual(Object.keys((await gen.json()) as object), ['engine', 'replica', 'model', 'completion', 'tokens']);
  assert.equal((await get(`http://127.0.0.1:${port}/nope`)).status, 404);
  e.child.kill('SIGTERM');
  assert.deepEqual(await e.exited, { code: 0, signal: null });
  assert.match(e.out(), /\[engine\/0\] SIGTERM: shutting down after 1 requests\n$/);
  assert.equal(e.err(), '');
});

test('engine: FAIL_REPLICA=1 makes replica 1 (only) fail to load: an error on stderr, exit 3', async () => {
  const bad = start('engine.js', ['--port', String(ports[1]), '--replica', '1', '--load-ms', '200'], { FAIL_REPLICA: '1' });
  const good = start('engine.js', ['--port', String(ports[2]), '--replica', '0', '--load-ms', '200'], { FAIL_REPLICA: '1' });
  assert.deepEqual(await bad.exited, { code: 3, signal: null });
  assert.match(bad.err(), /^\[engine\/1\] loading model "tiny-demo": shard 1\/4 ok, shard 2\/4 …\n\[engine\/1\] error: failed to load model "tiny-demo": weights file .*truncated.*\n\[engine\/1\] \(simulated failure: FAIL_REPLICA=1\)\n$/);
  await untilHealthy(`http://127.0.0.1:${ports[2]}/health`);
  good.child.kill('SIGTERM');
  assert.equal((await good.exited).code, 0);
  const flag = start('engine.js', ['--port', String(ports[1]), '--replica', '0', '--load-ms', '100', '--fail']);
  assert.equal((await flag.exited).code, 3);
  assert.match(flag.err(), /simulated failure: FAIL_REPLICA= --fail/);
  const usage = start('engine.js', ['--replica', '0']);
  assert.equal((await usage.exited).code, 64);
  assert.match(usage.err(), /usage: node engine\.js --port PORT/);
});

test('the whole demo by hand: two engines, a proxy, a client batch spread evenly', async () => {
  const [p0, p1, pp] = ports as [number, number, number];
  const e0 = start('engine.js', ['--port', String(p0), '--replica', '0', '--load-ms', '300']);
  const e1 = start('engine.js', ['--port', String(p1), '--replica', '1', '--load-ms', '500']);
  await Promise.all([untilHealthy(`http://127.0.0.1:${p0}/health`), untilHealthy(`http://127.0.0.1:${p1}/health`)]);
  const backends = `http://127.0.0.1:${p0},http://127.0.0.1:${p1}`;
  const proxy = start('proxy.js', ['--port', String(pp), '--backends', backends]);
  await proxy.waitFor(/listening/);
  assert.equal(proxy.out(), `[proxy] listening on 127.0.0.1:${pp} (pid ${proxy.child.pid}), round-robin over 2 backends: http://127.0.0.1:${p0} http://127.0.0.1:${p1}\n`);
  assert.deepEqual(await get(`http://127.0.0.1:${pp}/health`), { status: 200, body: { status: 'ok', backends: [`http://127.0.0.1:${p0}`, `http://127.0.0.1:${p1}`] } });

  const client = start('client.js', ['--url', `http://127.0.0.1:${pp}`, '--requests', '60', '--concurrency', '6']);
  assert.deepEqual(await client.exited, { code: 0, signal: null });
  const lines = client.out().split('\n');
  assert.match(lines[0]!, new RegExp(`^client: 60 requests to http://127\\.0\\.0\\.1:${pp} in \\d+\\.\\d\\d s \\(6 concurrent, \\d+ req/s\\)$`));
  assert.equal(lines[1], '  engine/0      30 requests');
  assert.equal(lines[2], '  engine/1      30 requests');
  assert.match(lines[3]!, /^ {2}latency {4}p50 \d+\.\d ms {2}p95 \d+\.\d ms {2}max \d+\.\d ms$/);
  assert.equal(lines[4], '  errors     0');
  assert.equal(client.err(), '');

  for (const c of [proxy, e0, e1]) c.child.kill('SIGTERM');
  for (const c of [proxy, e0, e1]) assert.equal((await c.exited).code, 0);
  assert.match(proxy.out(), new RegExp(`SIGTERM: shutting down; forwarded 30 to http://127\\.0\\.0\\.1:${p0}, 30 to http://127\\.0\\.0\\.1:${p1}\\n$`));
});

test('proxy moves on past a dead backend; client reports failures and exits 1', async () => {
  const [live, dead, pp] = [ports[3]!, ports[4]!, ports[2]!];
  // `dead` is leased to this test but nothing listens on it: connections are refused.
  const e = start('engine.js', ['--port', String(live), '--replica', '0', '--load-ms', '100']);
  await untilHealthy(`http://127.0.0.1:${live}/health`);
  const proxy = start('proxy.js', ['--port', String(pp), '--backends', `http://127.0.0.1:${dead},http://127.0.0.1:${live}`]);
  await proxy.waitFor(/listening/);
  const ok = start('client.js', ['--url', `http://127.0.0.1:${pp}`, '--requests', '10', '--concurrency', '2']);
  assert.equal((await ok.exited).code, 0);
  assert.match(ok.out(), /\n {2}engine\/0 {6}10 requests\n/);
  e.child.kill('SIGTERM');
  await e.exited;
  const failing = start('client.js', ['--url', `http://127.0.0.1:${pp}`, '--requests', '4', '--concurrency', '1']);
  assert.equal((await failing.exited).code, 1);
  assert.match(failing.out(), new RegExp(`\\n {2}errors {5}4 {2}\\(first: HTTP 502: no backend answered \\(last: http://127\\.0\\.0\\.1:\\d+: connect ECONNREFUSED 127\\.0\\.0\\.1:\\d+\\)\\)\\n$`));
  proxy.child.kill('SIGTERM');
  await proxy.exited;
  const noProxy = start('client.js', ['--url', `http://127.0.0.1:${pp}`, '--requests', '2']);
  assert.equal((await noProxy.exited).code, 1);
  assert.match(noProxy.out(), /errors {5}2 {2}\(first: connect ECONNREFUSED/);
});
