/**
 * The single executable (npm run build:bin → dist/bin/berth-linux-<arch>) does what
 * `node dist/berth.cjs` does. Each test runs a copy of it alone in an empty directory (so
 * nothing next to it can be read at run time), mostly with a PATH that has no node at all.
 * Range-dependent runs happen inside a network namespace made for the test. `npm test`
 * builds the binary first; run alone, this file builds it when missing or older than src/.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { binaryCopy, type BinaryCopy } from './helpers/binary.js';
import { BERTH, tempStateDir } from './helpers/cli.js';
import { netnsArgv, requireNetns, runCollect, type RunResult } from './helpers/netns.js';

let copy: BinaryCopy;
let BIN = '';
before(() => {
  copy = binaryCopy();
  BIN = copy.bin;
});
after(() => copy?.remove());

/** PATH for the binary's own runs: perl, python3 and sh, no node. */
const NO_NODE_PATH = () => copy.toolPath(['perl', 'python3', 'sh']);

/** Runs the copy; `path` replaces PATH for it alone (the namespace setup needs the usual one). */
function bin(args: string[], o: { env?: NodeJS.ProcessEnv; path?: string; netns?: boolean } = {}): Promise<RunResult> {
  const argv = [...(o.netns ? netnsArgv() : []), ...(o.path !== undefined ? ['/usr/bin/env', `PATH=${o.path}`] : []), BIN, ...args];
  return runCollect(argv, { env: { ...process.env, NO_COLOR: '1', ...o.env }, timeoutMs: 60_000 });
}

function script(args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  return runCollect([process.execPath, BERTH, ...args], { env: { ...process.env, NO_COLOR: '1', ...env }, timeoutMs: 60_000 });
}

const show = (r: RunResult) => `exit ${r.code} signal ${r.signal}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

test('the built binary is Node itself with berth inside, and runs from an empty directory without node on PATH', async () => {
  assert.deepEqual(readdirSync(copy.home), ['berth']);
  const v = await bin(['--version'], { path: NO_NODE_PATH() });
  assert.equal(v.code, 0, show(v));
  assert.equal(v.stdout, (await script(['--version'])).stdout);
  assert.equal(v.stderr, '', 'no SEA warning or anything else on stderr');
});

test('help, usage errors and every command\'s --help are the same as the script\'s', async () => {
  for (const args of [['--help'], [], ['nope'], ...['inspect', 'doctor', 'port', 'release', 'leases', 'run', 'up'].map((c) => [c, '--help']), ['port', '--count', 'x']]) {
    const [a, b] = await Promise.all([bin(args), script(args)]);
    assert.deepEqual({ code: a.code, stdout: a.stdout, stderr: a.stderr }, { code: b.code, stdout: b.stdout, stderr: b.stderr }, `berth ${args.join(' ')}`);
  }
});

test('doctor --json: the same report as the script (yaml parsed inside the binary)', async () => {
  const layout = resolve('examples/demo/layout.yaml');
  const [a, b] = await Promise.all([bin(['doctor', '--json', '--layout', layout], { path: NO_NODE_PATH() }), script(['doctor', '--json', '--layout', layout])]);
  assert.equal(a.code, b.code, show(a));
  const strip = (s: string) => {
    const j = JSON.parse(s) as Record<string, unknown>;
    delete j.generatedAt;
    delete j.sockets; // other tests' sockets come and go
    return j;
  };
  assert.equal((JSON.parse(a.stdout) as { kind: string }).kind, 'doctor');
  assert.deepEqual(strip(a.stdout).findings, strip(b.stdout).findings);
  assert.deepEqual(strip(a.stdout).layout, strip(b.stdout).layout);
});

test('port / leases / release round trip', async (t) => {
  if (!requireNetns(t)) return;
  const state = tempStateDir();
  // One namespace for the three commands: leases are per network namespace.
  const sh = `set -e
B=${BIN}
P=$($B port --range 24000-24009 --count 2 --ttl 5m --name smoke)
echo "ports" $P
echo ---; $B leases --json
$B release --port $(echo $P | cut -d' ' -f1) --port $(echo $P | cut -d' ' -f2)
echo ---; $B leases --json`;
  const r = await runCollect([...netnsArgv(), 'sh', '-c', sh], { env: { ...process.env, BERTH_STATE_DIR: state } });
  assert.equal(r.code, 0, show(r));
  const [ports, leases, after] = r.stdout.split('---\n');
  assert.equal(ports, 'ports 24000 24001\n');
  const [before, released] = leases!.split(/\n(?=released)/);
  assert.equal(released, 'released 24000 24001\n');
  assert.deepEqual((JSON.parse(before!) as { port: number; name?: string }[]).map((l) => [l.port, l.name]), [[24000, 'smoke'], [24001, 'smoke']]);
  assert.deepEqual(JSON.parse(after!), []);
});

const PY_RELEASE = 'import http.server as h, sys\ns = h.HTTPServer(("127.0.0.1", int(sys.argv[1])), h.SimpleHTTPRequestHandler)\ns.handle_request()';
const PY_FD = 'import http.server as h, socket\ns = h.HTTPServer(("", 0), h.SimpleHTTPRequestHandler, False)\ns.socket = socket.socket(fileno=3)\nassert s.socket.getblocking()\ns.handle_request()';

test('run, release handoff: ready, then the service\'s own exit status', async (t) => {
  if (!requireNetns(t)) return;
  const r = await bin(['run', '--range', '24100-24199', '--ready', 'http://127.0.0.1:{port}/', '--', '/usr/bin/python3', '-c', PY_RELEASE, '{port}'], { env: { BERTH_STATE_DIR: tempStateDir() }, path: NO_NODE_PATH(), netns: true });
  assert.equal(r.code, 0, show(r));
  assert.match(r.stderr, /berth: python3 ready on 127\.0\.0\.1:24100 pid \d+/);
});

test('run, fd handoff: the perl shim hands over a blocking fd 3', async (t) => {
  if (!requireNetns(t)) return;
  const r = await bin(['run', '--handoff', 'fd', '--range', '24100-24199', '--ready', 'http://127.0.0.1:{port}/', '--', '/usr/bin/python3', '-c', PY_FD], { env: { BERTH_STATE_DIR: tempStateDir() }, path: NO_NODE_PATH(), netns: true });
  assert.equal(r.code, 0, show(r));
  assert.match(r.stderr, /berth: python3 ready on 127\.0\.0\.1:24100 pid \d+/);
  assert.doesNotMatch(r.stderr, /perl not found/);
});

test('the demo stack runs from the binary', async (t) => {
  if (!requireNetns(t)) return;
  const runDir = join(copy.scratch, 'demo-run');
  const r = await bin(['up', resolve('examples/demo/stack.yaml'), '--run-dir', runDir], { env: { BERTH_STATE_DIR: tempStateDir() }, netns: true });
  assert.equal(r.code, 0, show(r));
  assert.match(r.stdout, /client: 200 requests to http:\/\/127\.0\.0\.1:21000/);
  assert.match(r.stderr, /berth: job client exited with status 0; stack stopped/);
  const eps = JSON.parse(readFileSync(join(runDir, 'endpoints.json'), 'utf8')) as { replicas: { service: string }[] };
  assert.deepEqual(eps.replicas.map((x) => x.service).sort(), ['client', 'engine', 'engine', 'proxy']);
});

test('SIGKILL of berth run: its watchdog (the binary itself, up --watchdog) stops the service', async (t) => {
  if (!requireNetns(t)) return;
  const argv = [...netnsArgv(), BIN, 'run', '--range', '24200-24299', '--ready', 'http://127.0.0.1:{port}/', '--', '/usr/bin/python3', '-m', 'http.server', '{port}', '--bind', '127.0.0.1'];
  const berth = spawn(argv[0]!, argv.slice(1), { env: { ...process.env, BERTH_STATE_DIR: tempStateDir() }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  let service = 0;
  t.after(() => {
    for (const p of [berth.pid!, service]) try { if (p) process.kill(p, 'SIGKILL'); } catch { /* gone */ }
  });
  await new Promise<void>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`not ready in 30 s:\n${err}`)), 30_000);
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
  const watchdogs = readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').join(' ').startsWith(`${BIN} up --watchdog ${berth.pid}`);
    } catch {
      return false;
    }
  });
  assert.equal(watchdogs.length, 1, `one watchdog of berth ${berth.pid}, run by the binary`);
  berth.kill('SIGKILL');
  const t0 = Date.now();
  while (existsSync(`/proc/${service}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${service}/status`, 'utf8'))) {
    assert.ok(Date.now() - t0 < 15_000, `the service ${service} still runs 15 s after berth was killed`);
    await new Promise((r) => setTimeout(r, 50));
  }
});

test('fd handoff without perl on PATH: refused before anything starts, from the binary and the script alike', async (t) => {
  if (!requireNetns(t)) return;
  const args = ['run', '--handoff', 'fd', '--range', '24300-24399', '--', '/usr/bin/python3', '-c', PY_FD];
  const path = copy.toolPath(['python3', 'sh']);
  const env = { BERTH_STATE_DIR: tempStateDir() };
  const scriptRun = await runCollect([...netnsArgv(), '/usr/bin/env', `PATH=${path}`, process.execPath, BERTH, ...args], { env: { ...process.env, ...env } });
  const binRun = await bin(args, { env, path, netns: true });
  for (const r of [binRun, scriptRun]) {
    assert.equal(r.code, 64, show(r));
    assert.match(r.stderr, /^berth: python3: fd handoff needs perl on PATH .*: install perl, or use the release handoff\n$/, show(r));
  }
});
