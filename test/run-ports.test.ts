/**
 * `berth run --ports`: a named set leased from one source, every port in the service's
 * environment (BERTH_PORT_<NAME>, a block's _FIRST/_LAST/_COUNT) and in its command
 * ({ports.NAME[.first|last|range|count]}), and with --handoff fd every single port handed
 * over as its own fd (3, 4, … in set order; LISTEN_FDS=N, LISTEN_FDNAMES=name1:name2),
 * listening before the service runs. Real processes in a fresh network namespace each.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireNetns } from './helpers/netns.js';
import { berthSh, countLeases, kv, netnsSh, q, readJson, realPython, sandbox, SERVICES, NODE, waitFile } from './fixtures/services/launch-harness.js';

const RANGE = '20000-20099';

test('fd handoff of two named ports: LISTEN_FDS=2, LISTEN_FDNAMES=http:grpc, both listening before start, both served', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const out = join(box.dir, 'out.txt');
  const rf = join(box.dir, 'ready.json');
  // Connects to both ports while the service still sleeps before its first accept(): the
  // handshakes complete into the backlogs of the handed sockets, then both are served.
  const client = `
const net = require('node:net'), fs = require('node:fs');
const ports = JSON.parse(process.argv[1]);
let left = ports.length;
for (const [name, port] of ports) {
  const c = net.connect(port, '127.0.0.1', () => {
    console.log('PRE_ACCEPT_' + name.toUpperCase() + '=' + !fs.readFileSync(${JSON.stringify(out)}, 'utf8').includes('multi-fd-server accepting'));
    c.write('GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n');
  });
  let d = '';
  c.on('data', (x) => (d += x));
  c.on('end', () => console.log('REPLY_' + name.toUpperCase() + '=' + JSON.stringify(d.split('\\r\\n\\r\\n')[1])));
  c.on('error', (e) => console.log('REPLY_' + name.toUpperCase() + '=' + e.code));
}
`;
  const r = await netnsSh({}, box, `
${berthSh} run --range ${RANGE} --handoff fd --ports http,grpc,dist=block:4 --name api --ready-file ${q(rf)} -- ${q(realPython())} -S ${q(join(SERVICES, 'multi-fd-server.py'))} 1.5 > ${q(out)} & B=$!
${waitFile(rf)}
i=0; until grep -q '^multi-fd-server {' ${q(out)} || [ $i -ge 500 ]; do sleep 0.01; i=$((i+1)); done
ports=$(sed -n 's/^multi-fd-server //p' ${q(out)} | ${q(NODE)} -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.stringify(JSON.parse(s).fds.map(f=>[f.name,f.port]))))')
${q(NODE)} -e ${q(client)} "$ports"
kill -TERM $B
wait $B
echo "RC=$?"
${countLeases}
`);
  const v = kv(r.stdout);
  const text = readFileSync(out, 'utf8');
  const report = JSON.parse(/^multi-fd-server (\{.*\})$/m.exec(text)?.[1] ?? 'null');
  assert.ok(report, text + r.stdout + r.stderr);
  const ready = readJson(rf);
  assert.equal(report.pid, ready.pid);
  assert.equal(report.LISTEN_PID, String(report.pid));
  assert.equal(report.LISTEN_FDS, '2', 'two single ports, two fds; the block is never an fd');
  assert.equal(report.LISTEN_FDNAMES, 'http:grpc');
  const [http, grpc] = report.fds;
  assert.deepEqual([http.fd, http.name, grpc.fd, grpc.name], [3, 'http', 4, 'grpc']);
  assert.deepEqual(ready.ports.map((a: { name: string }) => a.name), ['http', 'grpc', 'dist']);
  assert.equal(http.port, ready.port, 'fd 3 is the primary port');
  assert.equal(http.port, ready.ports[0].ports[0]);
  assert.equal(grpc.port, ready.ports[1].ports[0]);
  for (const f of report.fds) {
    assert.equal(f.blocking, true, `fd ${f.fd} handed over in blocking mode`);
    const inode = /socket:\[(\d+)\]/.exec(f.inode)?.[1];
    assert.deepEqual(f.listening_at_start, [inode], `fd ${f.fd} (port ${f.port}) was already LISTEN when the service began`);
  }
  assert.equal(report.env.BERTH_PORT_HTTP, String(http.port));
  assert.equal(report.env.BERTH_PORT_GRPC, String(grpc.port));
  assert.equal(report.env.BERTH_PORT_DIST_COUNT, '4');
  assert.equal(v.get('PRE_ACCEPT_HTTP'), 'true');
  assert.equal(v.get('PRE_ACCEPT_GRPC'), 'true');
  assert.equal(v.get('REPLY_HTTP'), JSON.stringify('served by http\n'));
  assert.equal(v.get('REPLY_GRPC'), JSON.stringify('served by grpc\n'));
  assert.match(r.stderr, new RegExp(`berth: api ready on 127\\.0\\.0\\.1:${http.port} pid ${report.pid} after \\d+\\.\\d\\ds \\(http ${http.port}, grpc ${grpc.port}, dist \\d+-\\d+\\)`));
  assert.doesNotMatch(r.stderr, /warning/, 'the handed sockets are the service\'s: nothing to warn about');
  assert.equal(v.get('RC'), '143');
  assert.equal(v.get('LEASES'), '0', 'every lease of the set is released when the service ends');
});

test('berth run --ports: BERTH_PORT_<NAME> in the environment, {ports.NAME[.field]} in the command, the set in the ready line and file', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const out = join(box.dir, 'out.txt');
  const rf = join(box.dir, 'ready.json');
  const r = await netnsSh({}, box, `
${berthSh} run --range ${RANGE} --ports http,admin,dist=block:8 --env API_PORT --ready-file ${q(rf)} -- ${q(realPython())} -S ${q(join(SERVICES, 'listen-ports.py'))} {ports.http} {ports.admin} -- x{ports.dist}x {ports.dist.first} {ports.dist.last} {ports.dist.range} {ports.dist.count} {port} > ${q(out)} & B=$!
${waitFile(rf)}
i=0; until grep -q '^listen-ports {' ${q(out)} || [ $i -ge 500 ]; do sleep 0.01; i=$((i+1)); done
${countLeases}
kill -TERM $B
wait $B
echo "RC=$?"
`);
  const v = kv(r.stdout);
  const text = readFileSync(out, 'utf8');
  const report = JSON.parse(/^listen-ports (\{.*\})$/m.exec(text)?.[1] ?? 'null');
  assert.ok(report, text + r.stdout + r.stderr);
  const ready = readJson(rf);
  const [http, admin, dist] = ready.ports as { name: string; kind: string; ports: number[] }[];
  assert.deepEqual([http!.name, http!.kind, admin!.name, admin!.kind, dist!.name, dist!.kind], ['http', 'single', 'admin', 'single', 'dist', 'block']);
  const d = dist!.ports;
  assert.equal(d.length, 8);
  for (let i = 1; i < d.length; i++) assert.equal(d[i], d[0]! + i, 'a block is contiguous');
  const all = [http!.ports[0]!, admin!.ports[0]!, ...d];
  assert.equal(new Set(all).size, all.length, 'the set\'s ports are distinct');
  for (const p of all) assert.ok(p >= 20000 && p <= 20099);
  assert.equal(ready.port, http!.ports[0], 'the first entry is the primary');
  const [lo, hi] = [d[0]!, d[d.length - 1]!];
  assert.deepEqual(report.argv, [String(http!.ports[0]), String(admin!.ports[0]), '--', `x${lo}x`, String(lo), String(hi), `${lo}-${hi}`, '8', String(http!.ports[0])]);
  assert.deepEqual(report.env, {
    API_PORT: String(http!.ports[0]),
    BERTH_PORT: String(http!.ports[0]),
    BERTH_PORT_HTTP: String(http!.ports[0]),
    BERTH_PORT_ADMIN: String(admin!.ports[0]),
    BERTH_PORT_DIST: String(lo),
    BERTH_PORT_DIST_FIRST: String(lo),
    BERTH_PORT_DIST_LAST: String(hi),
    BERTH_PORT_DIST_COUNT: '8',
  });
  assert.equal(v.get('LEASES'), '10', 'every port of the set is leased while the service runs');
  assert.match(r.stderr, new RegExp(`ready on 127\\.0\\.0\\.1:${http!.ports[0]} pid \\d+ after [\\d.]+s \\(http ${http!.ports[0]}, admin ${admin!.ports[0]}, dist ${lo}-${hi}\\)`));
  // The block is the program's own: it listens on its first port (and admin) without a warning.
  assert.doesNotMatch(r.stderr, /warning/);
  assert.equal(v.get('RC'), '143');
});

test('berth run --ports: a bad set or a {ports.NAME} that names no port is refused with 64 before anything is leased', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const r = await netnsSh({}, box, `
${berthSh} run --range ${RANGE} --ports http -- sh -c 'echo {ports.grpc}'; echo "UNKNOWN=$?"
${berthSh} run --range ${RANGE} --ports http,dist=block:4 -- sh -c 'echo {ports.dist.middle}'; echo "FIELD=$?"
${berthSh} run --range ${RANGE} --ports dist=block:4,http -- true; echo "FIRST=$?"
${berthSh} run --range ${RANGE} --ports http,http -- true; echo "TWICE=$?"
${berthSh} run --range ${RANGE} --ports http --ready 'http://127.0.0.1:{ports.nope}/' -- true; echo "READY=$?"
${berthSh} run --port 20000 --ports http,dist=block:4 -- true; echo "ONEPORT=$?"
${countLeases}
`);
  const v = kv(r.stdout);
  for (const k of ['UNKNOWN', 'FIELD', 'FIRST', 'TWICE', 'READY', 'ONEPORT']) assert.equal(v.get(k), '64', `${k}: ${r.stderr}`);
  assert.match(r.stderr, /\{ports\.grpc\} names no port of the set \(its ports: http\)/);
  assert.match(r.stderr, /\{ports\.dist\.middle\}: after the port's name only \.first, \.last, \.range, \.count may follow/);
  assert.match(r.stderr, /the first port "dist" is the primary .* must be a single port/);
  assert.match(r.stderr, /appears twice/);
  assert.match(r.stderr, /the ready probe: \{ports\.nope\} names no port/);
  assert.match(r.stderr, /--port 20000 is one port, but --ports http,dist needs 2 entries of their own: give --range LO-HI/);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack traces for usage errors');
  assert.equal(v.get('LEASES'), '0');
});

test('fd handoff of named ports: a handed socket the service closes is warned about once, naming the port and fd', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const r = await netnsSh({}, box, `
${berthSh} run --range ${RANGE} --handoff fd --ports http,grpc --name api -- ${q(realPython())} -S ${q(join(SERVICES, 'multi-fd-server.py'))} 0 grpc & B=$!
sleep 5
kill -TERM $B
wait $B
echo "RC=$?"
`, 60_000);
  const v = kv(r.stdout);
  assert.match(r.stderr, /berth: warning: api: the service no longer listens on "grpc" \(port 20001, fd 4\): it closed the socket berth handed over/);
  assert.equal(r.stderr.match(/no longer listens/g)?.length, 1, 'once');
  assert.doesNotMatch(r.stderr, /"http"/);
  assert.equal(v.get('RC'), '143');
});
