/**
 * Learned ports in a stack (`port: learn`, `NAME: { learn: REGEX }`), with real servers in a
 * network namespace: Debian's python3 `http.server 0` and a server of two listeners told apart
 * by their lines. The job reaches both through {svc.port}, {svc.url} and {svc.ports.NAME},
 * endpoints.json and events.jsonl carry the learned ports, `berth leases` lists them; and the
 * load-time refusals (65) of a command naming its own learned port and of a `started`
 * dependent naming one.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { box, events, up } from './fixtures/up/harness.js';
import { realPython, SERVICES } from './fixtures/services/launch-harness.js';

const TWO = join(SERVICES, 'learn-two.py');
const j = JSON.stringify;

const stack = `
services:
  web:
    port: learn
    command: ["/usr/bin/python3", -m, http.server, "0", --bind, 127.0.0.1]
    ready: http://127.0.0.1:{port}/
  two:
    ports:
      api: { learn: 'api listening on (\\d+)' }
      admin: { learn: 'admin listening on (\\d+)' }
    command: [${j(realPython())}, -u, ${j(TWO)}]
    ready: http://127.0.0.1:{ports.api}/
  client:
    job: true
    depends_on: { web: ready, two: ready }
    command: [sh, -c, 'echo "WEB={web.port} API={two.port} ADMIN={two.ports.admin} URL={two.url}"; curl -sf {web.url}/ > /dev/null && echo WEB_OK; curl -sf http://{two.ports.admin.hostport}/; echo; grep -c "@berth/v1/p/" /proc/net/unix | sed "s/^/LEASES=/"']
`;

test('stack: port: learn and { learn: REGEX } are learned, leased, and reach the job; endpoints.json and events.jsonl say so', async (t) => {
  if (!requireNetns(t)) return;
  const b = box(stack);
  t.after(() => b.cleanup());
  const u = up(b, [], { timeoutMs: 60_000 });
  const r = await u.result;
  assert.equal(r.code, 0, r.stderr);
  const kv = new Map([...r.stdout.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]));
  const doc = JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8'));
  const web = doc.replicas.find((x: any) => x.service === 'web');
  const two = doc.replicas.find((x: any) => x.service === 'two');
  assert.equal(Number(kv.get('WEB')), web.port, r.stdout);
  assert.deepEqual(web.learned, ['port']);
  assert.deepEqual(two.learned, ['api', 'admin']);
  assert.equal(Number(kv.get('API')), two.ports.api, 'the primary is the first entry, api');
  assert.equal(Number(kv.get('ADMIN')), two.ports.admin);
  assert.notEqual(two.ports.api, two.ports.admin);
  assert.equal(kv.get('URL'), `http://127.0.0.1:${two.ports.api}`);
  assert.match(r.stdout, /WEB_OK/);
  assert.match(r.stdout, /^admin$/m, 'the admin port is the admin listener');
  // web, api and admin are leased while the job runs (nothing else of the stack has a port).
  assert.equal(kv.get('LEASES'), '3');
  const learned = events(b).filter((e: any) => e.learned);
  assert.deepEqual(learned.map((e: any) => [e.service, e.learned]).sort(), [['two', { api: two.ports.api, admin: two.ports.admin }], ['web', { port: web.port }]].sort());
});

test('stack: a command naming its own learned port, and a started dependent naming one, are refused at load time (65)', async (t) => {
  if (!requireNetns(t)) return;
  const b = box(`
services:
  web:
    port: learn
    command: ["/usr/bin/python3", -m, http.server, "{port}"]
  two:
    ports: { api: learn }
    env: { API: "{ports.api}" }
    command: [sleep, "1"]
  client:
    job: true
    depends_on: { two: started }
    command: [echo, "{two.port}"]
`);
  t.after(() => b.cleanup());
  const r = await up(b, [], { timeoutMs: 30_000 }).result;
  assert.equal(r.code, 65, r.stderr);
  assert.match(r.stderr, /stack.yaml:5: service "web": command\[3\] uses \{port\}, but "port" is a port web chooses itself \(learn\)/);
  assert.match(r.stderr, /service "two": env API uses \{ports\.api\}, but "api" is a port two chooses itself \(learn\)/);
  assert.match(r.stderr, /service "client": command\[1\] uses \{two\.port\}, but "api" is a port two chooses itself \(learn\), known once it is ready, and client waits only for it to be started; write depends_on: \{ two: ready \}/);
});
