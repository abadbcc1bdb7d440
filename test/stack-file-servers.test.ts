/**
 * Stack keys for real servers, checked at load time and as pure functions: `scheme:` (URLs
 * of PostgreSQL, Redis … in placeholders, templates, endpoints.json), `dir_owner:` and the
 * replica directory `{dir}` (with the sun_path check of sockets under it), and the one-shot
 * rule (a step others wait for with `completed` gets no port unless it declares one).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BerthError, EXIT } from '../src/errors.js';
import { markOneShots } from '../src/stack/file/one-shot.js';
import { replicaDirPath, socketPathProblems } from '../src/stack/file/replica-dir-path.js';
import { templateContext } from '../src/stack/file/template-context.js';
import { applyUpdate, endpointUrl, loadStack, parseStack, resolveTemplate, type EndpointRecord, type ReplicaContext } from '../src/stack/index.js';

const FIX = 'test/fixtures/stacks/servers';

function problems(file: string): string[] {
  try {
    loadStack(`${FIX}/${file}`);
  } catch (e) {
    assert.ok(e instanceof BerthError);
    assert.equal(e.exitCode, EXIT.DATAERR);
    return e.message.split('\n').map((l) => l.replace(`${FIX}/`, ''));
  }
  assert.fail(`${file} loaded`);
}

test('bad scheme and dir_owner values, {svc.url} of a service without a scheme, the port of a one-shot step: 65 with file:line', () => {
  assert.deepEqual(problems('bad-servers.yaml'), [
    'bad-servers.yaml:3: service "pg": scheme "postgresql://": write the scheme alone, without "://" (scheme: postgresql)',
    'bad-servers.yaml:4: service "pg": dir_owner must be a user, or USER:GROUP (names or numbers), e.g. postgres; found "post gres"',
    'bad-servers.yaml:7: service "redis": scheme "9redis" is not a URL scheme (a letter, then letters, digits, "+", "-" or "."), e.g. http, postgresql, redis; or none',
    'bad-servers.yaml:8: service "redis": dir_owner must be a user, or USER:GROUP (names or numbers), e.g. postgres; found "a:b:c"',
    'bad-servers.yaml:14: service "user": command[1] uses {raw.url}, but "raw" has "scheme: none" (no URL); use {raw.hostport}, or give it a scheme',
    'bad-servers.yaml:14: service "user": command[2] uses {raw.urls}, but "raw" has "scheme: none" (no URL); use {raw.hostports}, or give it a scheme',
    'bad-servers.yaml:14: service "user": command[3] uses {init.port}, but "init" has no port (a one-shot step that others wait for with "completed" gets no port unless it declares one: give it port:, band:, ports: or {port})',
    'bad-servers.yaml:19: service "empty": scheme must be a URL scheme such as http, https, postgresql, redis, grpc, or none (no URL: only HOST:PORT)',
  ]);
});

test('the one-shot rule: who gets a port, whose exit 0 is completion; schemes and owners as read', () => {
  const s = loadStack(`${FIX}/servers.yaml`);
  const got = Object.fromEntries(s.services.map((x) => [x.name, [x.source.kind, x.oneShot, x.scheme, x.dirOwner ?? '-']]));
  assert.deepEqual(got, {
    init: ['none', true, 'http', 'postgres'], // awaited with completed, no port of its own
    migrate: ['none', true, 'http', '-'], // the same, though it names db's url
    db: ['default', false, 'postgresql', '999:999'], // a server: `ready:` and {port}; scheme in lower case
    cache: ['default', false, null, '-'], // scheme: none
    worker: ['default', true, 'http', '-'], // no ready, no port named: exit 0 is completion, the implicit port kept ($PORT)
    setup: ['port', true, 'http', '-'], // awaited, but declares its port: keeps it
    app: ['none', false, 'http', '-'], // the job: as before
  });
});

test('markOneShots on drafts: awaited steps lose the implicit port, servers and jobs do not', () => {
  const spec = parseStack('services:\n  a: { command: [x] }\n  b: { command: [y, "{port}"], ready: tcp }\n  c: { command: [z], depends_on: { a: completed, b: completed } }\n', 's.yaml', '.');
  assert.deepEqual(spec.services.map((x) => [x.name, x.source.kind, x.oneShot]), [
    ['a', 'none', true],
    ['b', 'default', true],
    ['c', 'default', true],
  ]);
  const drafts = spec.services.map((x) => ({ spec: { ...x, oneShot: false }, templates: [] }));
  assert.deepEqual([...markOneShots(drafts)], ['a'], 'b declares its port (ready: tcp), c is awaited by no one');
});

test('{dir} in command, env and ready; {svc.url} and templates in the service\'s scheme', () => {
  const spec = parseStack('services:\n  db:\n    scheme: postgresql\n    command: [postgres, -D, "{dir}/data"]\n    env: { PGDATA: "{dir}/data" }\n    ready: "cmd:test -d {dir}"\n', 's.yaml', '/srv');
  assert.equal(spec.services[0]!.ready?.kind, 'cmd');
  const ctx: ReplicaContext = {
    name: 'app',
    replica: 0,
    replicas: 1,
    host: '127.0.0.1',
    dir: '/run/x/data/app-0',
    endpoints: new Map([
      ['db', [{ host: '127.0.0.1', port: 25432, scheme: 'postgresql' }]],
      ['redis', [{ host: '::1', port: 26379, scheme: 'redis' }, { host: '0.0.0.0', port: 26380, scheme: 'redis' }]],
      ['raw', [{ host: '127.0.0.1', port: 9, scheme: null }]],
    ]),
  };
  assert.equal(resolveTemplate('{dir}/data', ctx), '/run/x/data/app-0/data');
  assert.equal(resolveTemplate('{db.url}/postgres', ctx), 'postgresql://127.0.0.1:25432/postgres');
  assert.equal(resolveTemplate('{redis.urls}', ctx), 'redis://[::1]:26379,redis://127.0.0.1:26380');
  assert.equal(resolveTemplate('{raw.hostport}', ctx), '127.0.0.1:9');
  assert.equal(endpointUrl({ host: '127.0.0.1', port: 1 }), 'http://127.0.0.1:1', 'http by default, as before');
  assert.equal(endpointUrl({ host: '127.0.0.1', port: 1, scheme: null }), null);

  const t = templateContext({
    name: 'proxy',
    replica: 0,
    replicas: 1,
    host: '127.0.0.1',
    port: 7000,
    scheme: 'redis',
    dir: '/run/x/data/proxy-0',
    endpoints: new Map([
      ['db', [{ host: '127.0.0.1', port: 25432, scheme: 'postgresql' }]],
      ['raw', [{ host: '127.0.0.1', port: 9, scheme: null }]],
    ]),
  });
  assert.equal(t.url, 'redis://127.0.0.1:7000');
  assert.equal(t.dir, '/run/x/data/proxy-0', '{{dir}} is the replica directory, as {dir}');
  const db = t.db as { url: string; urls: string; replicas: { url: string }[] };
  assert.deepEqual([db.url, db.urls, db.replicas[0]!.url], ['postgresql://127.0.0.1:25432', 'postgresql://127.0.0.1:25432', 'postgresql://127.0.0.1:25432']);
  const raw = t.raw as Record<string, unknown>;
  assert.ok(!('url' in raw) && !('urls' in raw), 'scheme: none: no url for a template to print');
});

test('a template naming {{url}} of a service without a scheme is refused at load time', async () => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'berth-scheme-'));
  writeFileSync(join(dir, 'c.conf.mustache'), 'upstream {{raw.url}};\n');
  writeFileSync(join(dir, 's.yaml'), 'services:\n  raw: { scheme: none, command: [x, "{port}"], ready: tcp }\n  p:\n    templates: { conf: c.conf.mustache }\n    command: [p, "{templates.conf}"]\n    depends_on: { raw: ready }\n');
  assert.throws(() => loadStack(join(dir, 's.yaml')), (e: BerthError) => e.exitCode === EXIT.DATAERR && /s\.yaml:4: service "p": template "conf": .*c\.conf\.mustache:1.*raw\.url/.test(e.message));
});

test('endpoints.json: url in the service\'s scheme, scheme recorded when not http, no url with scheme none', () => {
  const table: EndpointRecord[] = [];
  applyUpdate(table, { service: 'db', replica: 0, state: 'starting', host: '127.0.0.1', port: 25432, scheme: 'postgresql' });
  applyUpdate(table, { service: 'raw', replica: 0, state: 'starting', host: '::1', port: 9, scheme: null });
  applyUpdate(table, { service: 'web', replica: 0, state: 'starting', host: '127.0.0.1', port: 8000, scheme: 'http' });
  assert.deepEqual(table.map((r) => [r.url, r.scheme]), [
    ['postgresql://127.0.0.1:25432', 'postgresql'],
    [null, null],
    ['http://127.0.0.1:8000', undefined],
  ]);
  applyUpdate(table, { service: 'db', replica: 0, state: 'ready', pid: 5 });
  assert.equal(table[0]!.url, 'postgresql://127.0.0.1:25432', 'the scheme sticks');
});

test('replica directories are short, and a socket path under {dir} that would not fit sun_path refuses the run dir', () => {
  assert.equal(replicaDirPath('/r', 'engine', 3), '/r/data/engine-3');
  const spec = parseStack('services:\n  engine:\n    replicas: 2\n    command: [vllm, --zmq, "ipc://{dir}/engine.sock", "unix:{dir}/s"]\n    env: { SOCK: "unix://{dir}/a.sock", PLAIN: "{dir}/not-a-socket-path-so-never-checked-however-long-it-gets-to-be-in-the-end" }\n', 's.yaml', '.');
  assert.deepEqual(socketPathProblems(spec, '/tmp/r'), []);
  const deep = `/tmp/${'d'.repeat(84)}`;
  const got = socketPathProblems(spec, deep);
  assert.equal(got.length, 2, got.join('\n'));
  assert.match(got[0]!, /^service "engine" \(line 2\): command\[2\]: the Unix socket path \/tmp\/d+\/data\/engine-1\/engine\.sock is 115 bytes, but a socket path holds at most 107 \(sun_path\); use a --run-dir of at most 81 bytes/);
  assert.match(got[1]!, /env SOCK: .*a\.sock is 110 bytes/);
});

test('{svc.dir} and {svc.dirs}: any service of this host, no dependency needed; one replica for .dir; never across nodes', () => {
  const ok = parseStack('services:\n  init: { command: [initdb, -D, "{db.dir}/data", "{node.dirs}"] }\n  db: { command: [postgres, -D, "{dir}/data", -p, "{port}"], depends_on: { init: completed } }\n  node: { replicas: 2, command: [x, "{port}"] }\n', 's.yaml', '.');
  assert.equal(ok.services[0]!.source.kind, 'none');
  const ctx: ReplicaContext = { name: 'init', replica: 0, replicas: 1, host: '127.0.0.1', endpoints: new Map(), dirs: new Map([['db', ['/r/data/db-0']], ['node', ['/r/data/node-0', '/r/data/node-1']]]) };
  assert.equal(resolveTemplate('{db.dir}/data {node.dirs}', ctx), '/r/data/db-0/data /r/data/node-0,/r/data/node-1');
  assert.throws(
    () => parseStack('services:\n  a: { command: [x, "{b.dir}"] }\n  b: { replicas: 2, command: [y, "{port}"] }\n  c: { nodes: all, command: [z, "{a.dir}"] }\n', 's.yaml', '.'),
    (e: BerthError) =>
      e.exitCode === EXIT.DATAERR &&
      e.message.includes('s.yaml:2: service "a": command[1] uses {b.dir}, but "b" has 2 replicas; use {b.dirs} (all of them, comma-separated)') &&
      e.message.includes('s.yaml:4: service "c": command[1] uses {a.dir}, but a replica\'s directory is on its own node, and "c" runs on the Slurm nodes (nodes:)'),
  );
});
