/**
 * --handoff fd hands over a socket bound to the address asked for (--bind, a stack's
 * `host:`), never the wildcard, with the backlog a server would choose (net.core.somaxconn),
 * and it serves. Checked with `ss` inside a namespace whose somaxconn the test sets, so the
 * backlog seen is the kernel's limit, not a constant that happens to match.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireNetns } from './helpers/netns.js';
import { berthSh, kv, netnsSh, NODE, q, sandbox, SERVICES, serviceSh, waitFile } from './fixtures/services/launch-harness.js';

const P = 20000;
/** A server that accepts on fd 3 without listen() again, so the backlog seen is berth's (fixture's comment). */
const FD_SERVER = join(SERVICES, 'fd_accept.py');
const SOMAXCONN = 777;

/** Shell: print LISTEN_<i>=<Send-Q (the backlog)> <local address> for every listener on port p. */
const listeners = (p: number) => `ss -ltnH "sport = :${p}" | awk '{ print "LISTEN_" NR "=" $3 " " $4 }'`;

/** Shell: GET http://HOST:PORT/ with node; prints KEY=<status or error code>. */
const get = (key: string, host: string, p: number) =>
  `${q(NODE)} -e ${q(`require('http').get({ host: ${JSON.stringify(host)}, port: ${p}, path: '/', timeout: 3000 }, (r) => { console.log('${key}=' + r.statusCode); r.resume(); }).on('error', (e) => console.log('${key}=' + e.code))`)}`;

function listenRows(v: Map<string, string>): string[] {
  return [...v.entries()].filter(([k]) => k.startsWith('LISTEN_')).map(([, x]) => x);
}

for (const c of [
  { bind: '127.0.0.1', local: `127.0.0.1:${P}`, served: '127.0.0.1', refused: '::1' },
  { bind: '::1', local: `[::1]:${P}`, served: '::1', refused: '127.0.0.1' },
  { bind: undefined, local: `127.0.0.1:${P}`, served: '127.0.0.1', refused: '::1' },
  { bind: '0.0.0.0', local: `0.0.0.0:${P}`, served: '127.0.0.1', refused: '::1' },
]) {
  test(`fd handoff, --bind ${c.bind ?? '(none: 127.0.0.1)'}: one listener on ${c.local} with backlog somaxconn, served there only`, async (t) => {
    if (!requireNetns(t)) return;
    const box = sandbox();
    t.after(() => box.cleanup());
    const rf = join(box.dir, 'ready.json');
    const bind = c.bind === undefined ? '' : `--bind ${q(c.bind)}`;
    const r = await netnsSh({}, box, `
echo ${SOMAXCONN} > /proc/sys/net/core/somaxconn
${berthSh} run --port ${P} --handoff fd ${bind} --ready-file ${q(rf)} -- /usr/bin/python3 ${q(FD_SERVER)} > /dev/null & B=$!
${waitFile(rf)}
${listeners(P)}
${get('SERVED', c.served, P)}
${get('OTHER', c.refused, P)}
kill -TERM $B; wait $B
echo "RC=$?"
`);
    const v = kv(r.stdout);
    assert.deepEqual(listenRows(v), [`${SOMAXCONN} ${c.local}`], r.stdout + r.stderr);
    assert.equal(v.get('SERVED'), '200', r.stdout + r.stderr);
    assert.equal(v.get('OTHER'), 'ECONNREFUSED', 'nothing listens on the other loopback');
    assert.equal(v.get('RC'), '143');
  });
}

test("berth up: a service with handoff: fd listens on its host: only", async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const stack = join(box.dir, 'stack.yaml');
  const svc = (name: string, port: number, host?: string) => [
    `  ${name}:`,
    `    port: ${port}`,
    '    handoff: fd',
    ...(host === undefined ? [] : [`    host: "${host}"`]),
    `    command: [/usr/bin/python3, ${JSON.stringify(FD_SERVER)}]`,
  ];
  writeFileSync(stack, ['services:', ...svc('v6', P, '::1'), ...svc('dflt', P + 1), ''].join('\n'));
  const run = join(box.dir, 'run');
  const r = await netnsSh({}, box, `
echo ${SOMAXCONN} > /proc/sys/net/core/somaxconn
${berthSh} up ${q(stack)} --run-dir ${q(run)} > /dev/null 2>&1 & B=$!
i=0; until grep -q '"state": "ready"' ${q(join(run, 'endpoints.json'))} 2>/dev/null && [ "$(grep -c '"state": "ready"' ${q(join(run, 'endpoints.json'))})" = 2 ] || [ $i -ge 1000 ]; do sleep 0.01; i=$((i+1)); done
${listeners(P)}
ss -ltnH "sport = :${P + 1}" | awk '{ print "DFLT_" NR "=" $3 " " $4 }'
${get('V6', '::1', P)}
${get('DFLT', '127.0.0.1', P + 1)}
kill -INT $B; wait $B
`);
  const v = kv(r.stdout);
  assert.deepEqual(listenRows(v), [`${SOMAXCONN} [::1]:${P}`], r.stdout + r.stderr);
  assert.equal(v.get('DFLT_1'), `${SOMAXCONN} 127.0.0.1:${P + 1}`, r.stdout);
  assert.equal(v.get('DFLT_2'), undefined);
  assert.equal(v.get('V6'), '200');
  assert.equal(v.get('DFLT'), '200');
});

test('fd handoff on an address this host does not have: exit 64 naming it, nothing left behind', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const r = await netnsSh({}, box, `
timeout 20 ${berthSh} run --port ${P} --handoff fd --bind 10.77.0.1 -- ${serviceSh} --fd
echo "RC=$?"
echo "LEASES=$(grep -c '@berth/v1/p/' /proc/net/unix)"
`);
  const v = kv(r.stdout);
  assert.equal(v.get('RC'), '64', r.stdout + r.stderr);
  assert.match(r.stderr, /cannot listen on 10\.77\.0\.1: no interface of this host has that address \(EADDRNOTAVAIL\)/);
  assert.equal(v.get('LEASES'), '0');
});
