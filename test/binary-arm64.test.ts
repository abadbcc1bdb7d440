/**
 * The arm64 single executable (npm run build:bin -- --arch arm64 → dist/bin/berth-linux-arm64),
 * built on this machine from the official Node.js arm64 build, run under qemu-user (with
 * binfmt_misc, as the kernel of an arm64 node would run it: helpers/qemu.ts). The same smoke
 * set as the x64 binary (binary-smoke.test.ts): a copy alone in an empty directory, no node
 * on PATH, range-dependent runs inside a network namespace made for the test. Slow (every
 * start is emulated), never skipped in CI.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { binaryCopy, type BinaryCopy } from './helpers/binary.js';
import { tempStateDir } from './helpers/cli.js';
import { netnsArgv, requireNetns, runCollect, type RunResult } from './helpers/netns.js';
import { EMULATION_ENV, emulationUnavailable, requireEmulation } from './helpers/qemu.js';

let arm: BinaryCopy | undefined;
let x64: BinaryCopy | undefined;
before(() => {
  // Without emulation outside CI every test skips (loudly); the build would be for nothing.
  if (emulationUnavailable() !== undefined && !process.env.CI) return;
  arm = binaryCopy('arm64');
  x64 = binaryCopy('x64');
});
after(() => {
  arm?.remove();
  x64?.remove();
});

const NO_NODE_PATH = () => arm!.toolPath(['perl', 'python3', 'sh']);
const TIMEOUT = 180_000;

function run(bin: string, args: string[], o: { env?: NodeJS.ProcessEnv; path?: string; netns?: boolean } = {}): Promise<RunResult> {
  const argv = [...(o.netns ? netnsArgv() : []), ...(o.path !== undefined ? ['/usr/bin/env', `PATH=${o.path}`] : []), bin, ...args];
  return runCollect(argv, { env: { ...process.env, ...EMULATION_ENV, NO_COLOR: '1', ...o.env }, timeoutMs: TIMEOUT });
}
const armRun = (args: string[], o: Parameters<typeof run>[2] = {}) => run(arm!.bin, args, o);

const show = (r: RunResult) => `exit ${r.code} signal ${r.signal}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

test('arm64: the binary is an aarch64 ELF and runs from an empty directory without node on PATH', { timeout: TIMEOUT }, async (t) => {
  if (!requireEmulation(t)) return;
  const head = readFileSync(arm!.bin).subarray(0, 20);
  assert.equal(head.readUInt16LE(18), 183, 'e_machine EM_AARCH64');
  assert.deepEqual(readdirSync(arm!.home), ['berth']);
  const v = await armRun(['--version'], { path: NO_NODE_PATH() });
  assert.equal(v.code, 0, show(v));
  assert.equal(v.stdout, (await run(x64!.bin, ['--version'])).stdout);
  assert.equal(v.stderr, '', 'no SEA warning or anything else on stderr');
});

test('arm64: help, usage errors and every command\'s --help are the same as the x64 binary\'s', { timeout: 600_000 }, async (t) => {
  if (!requireEmulation(t)) return;
  for (const args of [['--help'], [], ['nope'], ...['inspect', 'doctor', 'port', 'release', 'leases', 'run', 'up'].map((c) => [c, '--help']), ['port', '--count', 'x']]) {
    const [a, b] = await Promise.all([armRun(args), run(x64!.bin, args)]);
    assert.deepEqual({ code: a.code, stdout: a.stdout, stderr: a.stderr }, { code: b.code, stdout: b.stdout, stderr: b.stderr }, `berth ${args.join(' ')}`);
  }
});

test('arm64: doctor --json gives the x64 binary\'s findings', { timeout: TIMEOUT }, async (t) => {
  if (!requireEmulation(t)) return;
  const layout = resolve('examples/demo/layout.yaml');
  const [a, b] = await Promise.all([armRun(['doctor', '--json', '--layout', layout], { path: NO_NODE_PATH() }), run(x64!.bin, ['doctor', '--json', '--layout', layout])]);
  assert.equal(a.code, b.code, show(a));
  const doc = (s: string) => JSON.parse(s) as { kind: string; findings: unknown; layout: unknown };
  assert.equal(doc(a.stdout).kind, 'doctor');
  assert.deepEqual(doc(a.stdout).findings, doc(b.stdout).findings);
  assert.deepEqual(doc(a.stdout).layout, doc(b.stdout).layout);
});

test('arm64: port / leases / release round trip', { timeout: TIMEOUT }, async (t) => {
  if (!requireEmulation(t) || !requireNetns(t)) return;
  const sh = `set -e
B=${arm!.bin}
P=$($B port --range 24000-24009 --count 2 --ttl 5m --name smoke)
echo "ports" $P
echo ---; $B leases --json
$B release --port $(echo $P | cut -d' ' -f1) --port $(echo $P | cut -d' ' -f2)
echo ---; $B leases --json`;
  const r = await runCollect([...netnsArgv(), 'sh', '-c', sh], { env: { ...process.env, ...EMULATION_ENV, BERTH_STATE_DIR: tempStateDir() }, timeoutMs: TIMEOUT });
  assert.equal(r.code, 0, show(r));
  const [ports, leases, afterRelease] = r.stdout.split('---\n');
  assert.equal(ports, 'ports 24000 24001\n');
  const [held, released] = leases!.split(/\n(?=released)/);
  assert.equal(released, 'released 24000 24001\n');
  assert.deepEqual((JSON.parse(held!) as { port: number; name?: string }[]).map((l) => [l.port, l.name]), [[24000, 'smoke'], [24001, 'smoke']]);
  assert.deepEqual(JSON.parse(afterRelease!), []);
});

const PY_RELEASE = 'import http.server as h, sys\ns = h.HTTPServer(("127.0.0.1", int(sys.argv[1])), h.SimpleHTTPRequestHandler)\ns.handle_request()';
const PY_FD = 'import http.server as h, socket\ns = h.HTTPServer(("", 0), h.SimpleHTTPRequestHandler, False)\ns.socket = socket.socket(fileno=3)\nassert s.socket.getblocking()\ns.handle_request()';

test('arm64: run, release handoff: ready, then the service\'s own exit status', { timeout: TIMEOUT }, async (t) => {
  if (!requireEmulation(t) || !requireNetns(t)) return;
  const r = await armRun(['run', '--range', '24100-24199', '--ready', 'http://127.0.0.1:{port}/', '--', '/usr/bin/python3', '-c', PY_RELEASE, '{port}'], { env: { BERTH_STATE_DIR: tempStateDir() }, path: NO_NODE_PATH(), netns: true });
  assert.equal(r.code, 0, show(r));
  assert.match(r.stderr, /berth: python3 ready on 127\.0\.0\.1:24100 pid \d+/);
});

test('arm64: run, fd handoff: the perl shim hands over a blocking fd 3', { timeout: TIMEOUT }, async (t) => {
  if (!requireEmulation(t) || !requireNetns(t)) return;
  const r = await armRun(['run', '--handoff', 'fd', '--range', '24100-24199', '--ready', 'http://127.0.0.1:{port}/', '--', '/usr/bin/python3', '-c', PY_FD], { env: { BERTH_STATE_DIR: tempStateDir() }, path: NO_NODE_PATH(), netns: true });
  assert.equal(r.code, 0, show(r));
  assert.match(r.stderr, /berth: python3 ready on 127\.0\.0\.1:24100 pid \d+/);
  assert.doesNotMatch(r.stderr, /perl not found/);
});

test('arm64: the demo stack runs from the binary', { timeout: 300_000 }, async (t) => {
  if (!requireEmulation(t) || !requireNetns(t)) return;
  const runDir = join(arm!.scratch, 'demo-run');
  const r = await armRun(['up', resolve('examples/demo/stack.yaml'), '--run-dir', runDir], { env: { BERTH_STATE_DIR: tempStateDir() }, netns: true });
  assert.equal(r.code, 0, show(r));
  assert.match(r.stdout, /client: 200 requests to http:\/\/127\.0\.0\.1:21000/);
  assert.match(r.stderr, /berth: job client exited with status 0; stack stopped/);
  const eps = JSON.parse(readFileSync(join(runDir, 'endpoints.json'), 'utf8')) as { replicas: { service: string }[] };
  assert.deepEqual(eps.replicas.map((x) => x.service).sort(), ['client', 'engine', 'engine', 'proxy']);
});

test('arm64: SIGKILL of berth run: its watchdog (the binary started again from process.execPath) stops the service', { timeout: TIMEOUT }, async (t) => {
  if (!requireEmulation(t) || !requireNetns(t)) return;
  const bin = arm!.bin;
  const argv = [...netnsArgv(), bin, 'run', '--range', '24200-24299', '--ready', 'http://127.0.0.1:{port}/', '--', '/usr/bin/python3', '-m', 'http.server', '{port}', '--bind', '127.0.0.1'];
  const berth = spawn(argv[0]!, argv.slice(1), { env: { ...process.env, ...EMULATION_ENV, BERTH_STATE_DIR: tempStateDir() }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  let service = 0;
  t.after(() => {
    for (const p of [berth.pid!, service]) try { if (p) process.kill(p, 'SIGKILL'); } catch { /* gone */ }
  });
  await new Promise<void>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`not ready in 120 s:\n${err}`)), 120_000);
    berth.stderr!.setEncoding('utf8').on('data', (d: string) => {
      err += d;
      const m = /ready on 127\.0\.0\.1:\d+ pid (\d+)/.exec(err);
      if (m) {
        service = Number(m[1]);
        clearTimeout(timer);
        res();
      }
    });
  });
  // Under binfmt_misc the kernel runs qemu with the binary's path and argv after it.
  const watchdogs = () => readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').join(' ').includes(`${bin} up --watchdog `);
    } catch {
      return false;
    }
  });
  // berth's pid is unshare's, whose sh execs berth: the watchdog names that same pid.
  const t0 = Date.now();
  while (watchdogs().length === 0 && Date.now() - t0 < 30_000) await new Promise((r) => setTimeout(r, 100));
  assert.equal(watchdogs().length, 1, 'one watchdog, run by the binary');
  berth.kill('SIGKILL');
  const t1 = Date.now();
  while (existsSync(`/proc/${service}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${service}/status`, 'utf8'))) {
    assert.ok(Date.now() - t1 < 60_000, `the service ${service} still runs 60 s after berth was killed`);
    await new Promise((r) => setTimeout(r, 100));
  }
});
