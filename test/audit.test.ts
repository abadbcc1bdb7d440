/**
 * The listener audit: what a service's process tree listens on outside its port set.
 * Pure comparison on fixtures (audit.ts, port-vars.ts), then real services in network
 * namespaces with a narrow ephemeral range: a listener inside it is reported once, with the
 * port, in the warning line and the audit event; a one-port `berth run` is audited too; a
 * service that misses its deadline because it listens elsewhere is told where.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { AssignedPorts } from '../src/allocate/port-set.js';
import { auditListeners, auditWarning, describeSet, isAcknowledged, listensElsewhere, setPorts, type TreeListener } from '../src/launch/audit.js';
import { portPlaceholderProblem, portVars, standInPorts } from '../src/launch/port-vars.js';
import { requireNetns } from './helpers/netns.js';
import { berthSh, kv, netnsSh, q, realPython, sandbox, SERVICES } from './fixtures/services/launch-harness.js';

const SET: AssignedPorts[] = [
  { name: 'http', kind: 'single', ports: [20000] },
  { name: 'dist', kind: 'block', ports: Array.from({ length: 32 }, (_, i) => 20001 + i) },
];
const EPH = [{ lo: 32768, hi: 60999 }];

test('audit: listeners inside the set are fine; outside it one finding per port, ephemeral called out with the fix', () => {
  const listeners: TreeListener[] = [
    { port: 20000, address: '127.0.0.1', pid: 10, command: 'api' },
    { port: 20017, address: '0.0.0.0', pid: 11, command: 'worker' }, // inside the block
    { port: 36123, address: '0.0.0.0' },
    { port: 36123, address: '::', pid: 12, command: 'api --extra' }, // v4 + v6: one finding, the one with a holder
    { port: 8000, address: '127.0.0.1', pid: 10, command: 'api' },
  ];
  const found = auditListeners({ name: 'api', set: SET, listeners, ephemeral: EPH, reported: new Set() });
  assert.deepEqual(
    found.map((f) => [f.port, f.ephemeral, f.pid, f.address]),
    [
      [8000, false, 10, '127.0.0.1'],
      [36123, true, 12, '::'],
    ],
  );
  assert.equal(
    found[1]!.message,
    'api listens on 36123 outside its ports (http 20000, dist 20001-20032); 36123 is inside the unreserved ephemeral range 32768-60999, where any outgoing connection may take it: declare a port for it (--ports …,NAME, then {ports.NAME} in its command) and pass that to the program\'s flag for it',
  );
  assert.match(found[0]!.message, /^api listens on 8000 outside its ports \(http 20000, dist 20001-20032\); nothing leases 8000 for it/);
  assert.equal(found[1]!.command, 'api --extra');
  // Reported ports are not reported again.
  assert.deepEqual(auditListeners({ name: 'api', set: SET, listeners, ephemeral: EPH, reported: new Set([8000, 36123]) }), []);
});

test('audit: a reserved hole in the ephemeral range is not ephemeral; the range named is the piece holding the port', () => {
  const eph = [{ lo: 32768, hi: 39999 }, { lo: 40100, hi: 60999 }]; // 40000-40099 reserved
  const found = auditListeners({ name: 's', set: SET, listeners: [{ port: 40050, address: '::' }, { port: 41000, address: '::' }], ephemeral: eph, reported: new Set(), portHint: 'ports: { NAME: 1 } in the stack file' });
  assert.deepEqual(found.map((f) => [f.port, f.ephemeral]), [[40050, false], [41000, true]]);
  assert.match(found[1]!.message, /inside the unreserved ephemeral range 40100-60999, .*declare a port for it \(ports: \{ NAME: 1 \} in the stack file\)/);
  // Issue 32 item 21: one port is told to get a port of its own, not a block (before: "{ block: N }").
  assert.doesNotMatch(found[1]!.message, /block/);
});

test('audit helpers: set ports, description, "listens elsewhere", placeholders', () => {
  assert.equal(setPorts(SET).size, 33);
  assert.equal(describeSet(SET), 'http 20000, dist 20001-20032');
  assert.equal(listensElsewhere([{ port: 1025, address: '::' }], 1025), undefined);
  assert.match(listensElsewhere([{ port: 8000, address: '0.0.0.0' }, { port: 1025, address: '::' }], 1025)!, /^it listens on 8000 instead/);
  assert.match(listensElsewhere([{ port: 8001, address: '0.0.0.0' }, { port: 8000, address: '0.0.0.0' }, { port: 8000, address: '::' }], 1025)!, /^it listens on 8000 and 8001 instead/);
  const vars = portVars(SET);
  assert.equal(vars['ports.http'], '20000');
  assert.equal(vars['ports.dist'], '20001');
  assert.equal(vars['ports.dist.last'], '20032');
  assert.equal(vars['ports.dist.range'], '20001-20032');
  assert.equal(vars['ports.dist.count'], '32');
  assert.equal(portPlaceholderProblem('--port {ports.http} --x {ports.dist.last} {port}', ['http', 'dist']), undefined);
  assert.match(portPlaceholderProblem('{ports.grpc}', ['http', 'dist'])!, /names no port of the set \(its ports: http, dist\)/);
  assert.match(portPlaceholderProblem('{ports.port.x}', ['port'])!, /only \.first, \.last, \.range, \.count/);
  assert.match(portPlaceholderProblem('{ports.x}', ['port'])!, /declare more with --ports/);
  assert.equal(standInPorts('http://h:{ports.http}/{ports.dist.first}'), 'http://h:1/1');
});

const RANGE = '20000-20099';

test('audit: a service that also listens inside the ephemeral range is reported with that port (warning line, audit event), once', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const events = join(box.dir, 'events.jsonl');
  // Ephemeral range 30000-30099 in the namespace: the service's extra port 30050 is inside it.
  const r = await netnsSh({ ephemeral: '30000 30099' }, box, `
${berthSh} run --range ${RANGE} --ports http,dist=block:4 --name api --json -- ${q(realPython())} -S ${q(join(SERVICES, 'listen-ports.py'))} {ports.http} {ports.dist.last} 30050 2> ${q(events)} & B=$!
# Ready, then at least two audit rounds (every 3 s): the port is reported once, not per round.
i=0; until grep -q '"event":"audit"' ${q(events)} || [ $i -ge 1500 ]; do sleep 0.01; i=$((i+1)); done
sleep 7
kill -TERM $B
wait $B
echo "RC=$?"
cat ${q(events)} >&2
`, 60_000);
  const v = kv(r.stdout);
  const lines = r.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const audits = lines.filter((e) => e.event === 'audit');
  const warnings = lines.filter((e) => e.event === 'warning');
  assert.equal(audits.length, 1, r.stderr);
  assert.equal(audits[0].listeners.length, 1);
  const f = audits[0].listeners[0];
  assert.equal(f.port, 30050);
  assert.equal(f.ephemeral, true);
  assert.equal(f.address, '127.0.0.1');
  assert.ok(f.pid > 0);
  assert.match(f.command, /listen-ports\.py/);
  assert.match(f.message, /^api listens on 30050 outside its ports \(http 200\d\d, dist 200\d\d-200\d\d\); 30050 is inside the unreserved ephemeral range 30000-30099, where any outgoing connection may take it: declare a port for it \(--ports …,NAME, then \{ports\.NAME\} in its command\) and pass that to the program's flag for it$/);
  assert.equal(warnings.length, 1, 'one warning for the one port');
  assert.equal(warnings[0].message, f.message);
  assert.equal(v.get('RC'), '143');
});

test('audit: a one-port berth run (no --ports) is audited against its one port, at ready and periodically; the stderr line names the port', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const err = join(box.dir, 'err');
  const r = await netnsSh({ ephemeral: '30000 30099' }, box, `
${berthSh} run --range ${RANGE} --name web -- ${q(realPython())} -S ${q(join(SERVICES, 'listen-ports.py'))} --delay 0.3 {port} 21000 --then 1 30077 2> ${q(err)} & B=$!
# 21000 is there at ready (the first audit); 30077 comes a second later, for a periodic audit (every 3 s) to find.
i=0; until grep -q 'listens on 30077' ${q(err)} 2>/dev/null || [ $i -ge 6000 ]; do sleep 0.01; i=$((i+1)); done
# Then two more rounds, in which it must not be reported again.
sleep 7
kill -TERM $B
wait $B
echo "RC=$?"
cat ${q(err)} >&2
`, 120_000);
  const v = kv(r.stdout);
  assert.match(r.stderr, /berth: warning: web listens on 21000 outside its ports \(port 200\d\d\); nothing leases 21000 for it/);
  assert.match(r.stderr, /berth: warning: web listens on 30077 outside its ports \(port 200\d\d\); 30077 is inside the unreserved ephemeral range 30000-30099, where any outgoing connection may take it/);
  assert.equal(r.stderr.match(/listens on 30077/g)?.length, 1, 'reported once');
  assert.equal(v.get('RC'), '143');
});

test('deadline: a service that listens elsewhere is told so ("it listens on 18000 instead"), exit 75', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const r = await netnsSh({}, box, `
${berthSh} run --range ${RANGE} --ready-timeout 3s --name uv -- ${q(realPython())} -S ${q(join(SERVICES, 'listen-ports.py'))} 18000 18001
echo "RC=$?"
`, 60_000);
  const v = kv(r.stdout);
  assert.equal(v.get('RC'), '75');
  assert.match(r.stderr, /uv: not ready after 3\.0s \(--ready-timeout\): the service did not listen on port 200\d\d; it listens on 18000 and 18001 instead \(is the port passed to it\? \{port\} in its command, or \$PORT\)/);
});

test('audit: several findings of one pass are one message naming each port once; acknowledged strays (strays:) are matched by kind or port', () => {
  const listeners: TreeListener[] = [36123, 36124, 36125, 8000].map((port) => ({ port, address: '127.0.0.1', pid: 10, command: 'kernel' }));
  const found = auditListeners({ name: 'lab/0', set: SET, listeners, ephemeral: EPH, reported: new Set() });
  assert.equal(
    auditWarning('lab/0', SET, found, EPH, { block: 'ports: NAME: { block: N } in the stack file', strays: 'strays: ephemeral in the stack file' }),
    "lab/0 listens on 4 ports outside its ports (http 20000, dist 20001-20032): 36123, 36124 and 36125 inside the unreserved ephemeral range 32768-60999, where any outgoing connection may take them; 8000 leased by nothing, so another allocator may hand it out: put them in a block (ports: NAME: { block: N } in the stack file) or set the program's flags for them; if the program picks them itself and cannot be told which, acknowledge them (strays: ephemeral in the stack file)",
  );
  // One finding: its own message (the strays hint only for an ephemeral one, only where strays: exists).
  assert.equal(auditWarning('lab/0', SET, [found[0]!], EPH, { block: 'x' }), found[0]!.message);
  assert.match(auditWarning('lab/0', SET, [found[1]!], EPH, { block: 'x', strays: 'strays: ephemeral' }), /may take it: .*; if the program picks them itself and cannot be told which, acknowledge them \(strays: ephemeral\)$/);
  const [p8000, e1] = [found[0]!, found[1]!];
  assert.equal(isAcknowledged(e1, [{ kind: 'ephemeral' }]), true);
  assert.equal(isAcknowledged(p8000, [{ kind: 'ephemeral' }]), false);
  assert.equal(isAcknowledged(p8000, [{ kind: 'ports', lo: 7999, hi: 8001 }]), true);
  assert.equal(isAcknowledged(p8000, [{ kind: 'all' }]), true);
  assert.equal(isAcknowledged(e1, undefined), false);
});
