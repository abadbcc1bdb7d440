/**
 * The server recipes of examples/recipes, run for real with Debian's packages (installed by
 * .ci/run): `berth up` of each recipe's stack in a fresh network namespace, whose job checks
 * an answer from the server; the server's own log must name the port berth reported. Plus
 * what docs/run.md claims about fd handoff: gunicorn with `--bind fd://3` fails (so the
 * recipe gives it no --bind), and a program that calls sd_listen_fds(3) finds the socket.
 * Python starts slowly on a loaded host: the recipes wait up to 2 minutes for readiness.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { berth } from './helpers/cli.js';
import { requireNetns, type RunResult } from './helpers/netns.js';
import { NEED, requireNeeds, type Need } from './helpers/require.js';

const RECIPES = resolve('examples/recipes');
const TIMEOUT = 240_000;

interface Up {
  r: RunResult;
  run: string;
  /** The port of `service/0` from the "stack ready" table. */
  port: number;
  log: (file: string) => string;
}

/** `berth up` of `stack` in a fresh namespace; undefined when the test skips (no namespace, or a program of `needs` missing). */
async function up(t: TestContext, stack: string, service: string, needs: Need[]): Promise<Up | undefined> {
  if (!requireNeeds(t, ...needs)) return undefined;
  if (!requireNetns(t)) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'berth-recipe-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const run = join(dir, 'run');
  const r = await berth(['up', stack, '--run-dir', run], { netns: {}, env: { BERTH_STATE_DIR: join(dir, 'state') }, timeoutMs: TIMEOUT });
  const m = new RegExp(`^ {2}${service}/0 +http://127\\.0\\.0\\.1:(\\d+) +pid \\d+$`, 'm').exec(r.stderr);
  return { r, run, port: m ? Number(m[1]) : NaN, log: (f) => readFileSync(join(run, 'logs', f), 'utf8') };
}

const recipe = (name: string) => join(RECIPES, name, 'stack.yaml');

/** Python run by the recipes must not leave __pycache__ in the source tree. */
function noBytecode(name: string): void {
  assert.ok(!readdirSync(join(RECIPES, name)).includes('__pycache__'), `examples/recipes/${name}/__pycache__ was written`);
}

describe('server recipes (examples/recipes), run with Debian\'s packages', { concurrency: 2, timeout: 4 * TIMEOUT }, () => {
  test('gunicorn under fd handoff, no --bind: both workers on the inherited socket, the check gets an answer', async (t) => {
    const u = await up(t, recipe('gunicorn'), 'web', [NEED.python3, NEED.gunicorn, NEED.perl, NEED.curl]);
    if (!u) return;
    assert.equal(u.r.code, 0, u.r.stderr);
    assert.match(u.r.stdout, /^hello from gunicorn worker \d+$/m);
    assert.ok(u.port > 0, u.r.stderr);
    const log = u.log('web-0.err');
    // gunicorn names the socket it found through LISTEN_FDS: the one berth leased and held.
    assert.match(log, new RegExp(`Listening at: http://127\\.0\\.0\\.1:${u.port} `));
    assert.equal(log.match(/Booting worker with pid/g)?.length, 2, log);
    assert.match(u.r.stderr, /berth: job check exited with status 0/);
    noBytecode('gunicorn');
  });

  test('uvicorn --fd 3', async (t) => {
    const u = await up(t, recipe('uvicorn'), 'web', [NEED.python3, NEED.uvicorn, NEED.perl, NEED.curl]);
    if (!u) return;
    assert.equal(u.r.code, 0, u.r.stderr);
    assert.match(u.r.stdout, /^hello from uvicorn pid \d+$/m);
    assert.match(u.log('web-0.err'), new RegExp(`Uvicorn running on socket \\('127\\.0\\.0\\.1', ${u.port}\\)`));
    noBytecode('uvicorn');
  });

  test('hypercorn --bind fd://3', async (t) => {
    const u = await up(t, recipe('hypercorn'), 'web', [NEED.python3, NEED.hypercorn, NEED.perl, NEED.curl]);
    if (!u) return;
    assert.equal(u.r.code, 0, u.r.stderr);
    assert.match(u.r.stdout, /^hello from hypercorn pid \d+$/m);
    assert.match(u.log('web-0.err'), new RegExp(`Running on http://127\\.0\\.0\\.1:${u.port} `));
    noBytecode('uvicorn');
  });

  test('redis, release handoff, --port {port}, ready by redis-cli ping', async (t) => {
    const u = await up(t, recipe('redis'), 'redis', [NEED.redisServer, NEED.redisCli]);
    if (!u) return;
    assert.equal(u.r.code, 0, u.r.stderr);
    assert.equal(u.r.stdout, 'berth\n');
    const log = u.log('redis-0.out');
    assert.match(log, /Ready to accept connections/);
    assert.match(log, new RegExp(`Running mode=standalone, port=${u.port}\\.`));
    assert.equal(existsSync(join(RECIPES, 'redis', 'dump.rdb')), false, 'redis wrote no dump into the recipe folder');
  });

  for (const [name, started] of [['nginx', /nginx\.conf/], ['haproxy', /haproxy\.cfg/]] as const) {
    test(`${name} in front of two uvicorn engines through a config template: both engines answer`, async (t) => {
      const u = await up(t, recipe(name), 'proxy', [NEED.python3, NEED.uvicorn, NEED.perl, name === 'nginx' ? NEED.nginx : NEED.haproxy]);
      if (!u) return;
      assert.equal(u.r.code, 0, u.r.stderr);
      // The check job printed every distinct answer it got through the proxy: one per engine.
      assert.match(u.r.stdout, /^hello from uvicorn engine 0 pid \d+$/m);
      assert.match(u.r.stdout, /^hello from uvicorn engine 1 pid \d+$/m);
      const dir = join(u.run, 'data', 'proxy-0');
      const file = readdirSync(dir).find((f) => started.test(f));
      assert.ok(file, `no rendered config in ${dir}`);
      const conf = readFileSync(join(dir, file), 'utf8');
      // Every engine's address from the stack, the file's own braces kept, no tag left.
      const ports = [...conf.matchAll(/127\.0\.0\.1:(\d+)/g)].map((m) => Number(m[1]));
      assert.ok(ports.includes(u.port), `the proxy's own port ${u.port} in ${conf}`);
      assert.equal(new Set(ports).size, 3, conf);
      assert.doesNotMatch(conf, /\{\{|\}\}/);
      noBytecode('uvicorn');
    });
  }

  test('a 3-member etcd cluster from flags: --initial-cluster from every member\'s leased peer port, each member\'s data in its directory, the member list', async (t) => {
    const u = await up(t, recipe('etcd-cluster'), 'etcd', [NEED.etcd, NEED.etcdctl]);
    if (!u) return;
    assert.equal(u.r.code, 0, u.r.stderr);
    const doc = JSON.parse(readFileSync(join(u.run, 'endpoints.json'), 'utf8')) as { replicas: { service: string; replica: number; ports?: { client: number; peer: number } }[] };
    const members = doc.replicas.filter((x) => x.service === 'etcd').sort((a, b) => a.replica - b.replica);
    assert.equal(members.length, 3);
    // The job's `etcdctl member list`: the cluster formed of all three, each named m<replica>
    // (--name=m{replica}) at its leased peer and client port — so every member was given the
    // same --initial-cluster (m{index}=http://{hostport}) and the same --initial-cluster-token.
    const listed = u.r.stdout.trim().split('\n').map((l) => l.split(', ').slice(1, 5).join(' ')).sort();
    assert.deepEqual(listed, members.map((m) => `started m${m.replica} http://127.0.0.1:${m.ports!.peer} http://127.0.0.1:${m.ports!.client}`), u.r.stdout);
    const ids = new Set<string>();
    for (const m of members) {
      const log = u.log(`etcd-${m.replica}.err`);
      assert.match(log, new RegExp(`name = m${m.replica}$`, 'm'));
      // --data-dir={dir}/data: the member's data in its own replica directory.
      assert.match(log, new RegExp(`data dir = ${join(u.run, 'data', `etcd-${m.replica}`, 'data').replace(/[.]/g, '\\.')}$`, 'm'));
      assert.ok(existsSync(join(u.run, 'data', `etcd-${m.replica}`, 'data', 'member')), 'etcd wrote its member directory there');
      ids.add(/starting member \w+ in cluster (\w+)/.exec(log)?.[1] ?? '');
    }
    assert.equal(ids.size, 1, 'one cluster id: the same token and initial cluster on every member');
  });

  test('gunicorn with --bind fd://3 fails with "Bad file descriptor" (why the recipe has no --bind)', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-recipe-bad-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const stack = join(dir, 'stack.yaml');
    writeFileSync(
      stack,
      `services:
  web:
    handoff: fd
    cwd: ${JSON.stringify(join(RECIPES, 'gunicorn'))}
    command: [/usr/bin/python3, -m, gunicorn, --bind, "fd://3", app:app]
    env: { PYTHONDONTWRITEBYTECODE: "1" }
    ready: http://127.0.0.1:{port}/health
    ready_timeout: 2m
`,
    );
    const u = await up(t, stack, 'web', [NEED.python3, NEED.gunicorn, NEED.perl]);
    if (!u) return;
    assert.equal(u.r.code, 70, u.r.stderr);
    assert.match(u.r.stderr, /berth: web\/0 failed: the service exited with status 1 before it was ready/);
    assert.match(u.r.stderr, /OSError: \[Errno 9\] Bad file descriptor/);
  });

  test('a program that calls sd_listen_fds(3) (python3-systemd) finds the socket by itself', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-recipe-sd-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(
      join(dir, 'sd.py'),
      `import http.server, socket
from systemd import daemon

fds = daemon.listen_fds()  # sd_listen_fds(3): checks LISTEN_PID, then takes LISTEN_FDS fds from 3 on
print('sd_listen_fds:', fds, flush=True)


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ('hello through sd_listen_fds %s\\n' % fds).encode()
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = http.server.HTTPServer(('', 0), Hello, False)
server.socket = socket.socket(fileno=fds[0])
server.serve_forever()
`,
    );
    writeFileSync(
      join(dir, 'stack.yaml'),
      `services:
  sd:
    handoff: fd
    command: [/usr/bin/python3, sd.py]
    env: { PYTHONDONTWRITEBYTECODE: "1" }
    ready: http://127.0.0.1:{port}/
    ready_timeout: 2m
  check:
    command: [curl, -fsS, "{sd.url}/"]
    depends_on: { sd: ready }
    job: true
`,
    );
    const u = await up(t, join(dir, 'stack.yaml'), 'sd', [NEED.python3, NEED.pythonSystemd, NEED.perl, NEED.curl]);
    if (!u) return;
    assert.equal(u.r.code, 0, u.r.stderr);
    assert.equal(u.r.stdout, 'hello through sd_listen_fds [3]\n');
    assert.match(u.log('sd-0.out'), /^sd_listen_fds: \[3\]$/m);
  });
});
