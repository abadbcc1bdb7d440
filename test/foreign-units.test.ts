/**
 * Foreign listeners, the pure part (foreign.ts) on fixture rows: which ports of a replica are
 * checked, when a stranger shares the listener through SO_REUSEPORT, what the line says; and
 * the stack's `strict:` key (top level and per service) as loaded.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AssignedPorts } from '../src/allocate/port-set.js';
import { EXIT } from '../src/errors.js';
import type { SocketRow } from '../src/host/host-map.js';
import { candidatePorts, checkedPorts, findForeign, foreignWarning, sharesReuseport } from '../src/launch/foreign.js';
import { BerthError } from '../src/errors.js';
import { parseStack } from '../src/stack/index.js';

const row = (family: 4 | 6, localAddress: string, localPort: number, inode: number, uid = 1000): SocketRow => ({ family, localAddress, localPort, remoteAddress: family === 4 ? '0.0.0.0' : '::', remotePort: 0, state: 'LISTEN', uid, inode });

const SET: AssignedPorts[] = [
  { name: 'http', kind: 'single', ports: [20000] },
  { name: 'grpc', kind: 'single', ports: [20001] },
  { name: 'dist', kind: 'block', ports: [20002, 20003, 20004] },
];
const SHARED: AssignedPorts[] = [{ name: 'master', kind: 'single', ports: [21000] }];

test('foreign: singles are always checked; block and shared ports only where the tree listens', () => {
  assert.deepEqual([...checkedPorts(SET, SHARED, new Set())].sort(), [20000, 20001]);
  assert.deepEqual([...checkedPorts(SET, SHARED, new Set([20003, 21000]))].sort(), [20000, 20001, 20003, 21000]);
  assert.equal(candidatePorts(SET, SHARED).size, 6);
});

test('foreign: the same family, address and port as a tree listener is SO_REUSEPORT; the other family or address is not', () => {
  const tree = [row(4, '127.0.0.1', 20000, 1)];
  assert.equal(sharesReuseport(row(4, '127.0.0.1', 20000, 2), tree), true);
  assert.equal(sharesReuseport(row(6, '::1', 20000, 2), tree), false);
  assert.equal(sharesReuseport(row(4, '127.0.0.2', 20000, 2), tree), false);
  assert.equal(sharesReuseport(row(4, '127.0.0.1', 20001, 2), tree), false);
});

test('foreign: one finding per foreign socket, naming pid, uid, command, address; an invisible holder by its uid', () => {
  const rows = [row(4, '127.0.0.1', 20000, 1), row(4, '127.0.0.1', 20000, 2), row(6, '::1', 20000, 3, 1001)];
  const owners = new Map([[2, [{ pid: 4242, comm: 'python3', cmdline: ['python3', 'srv.py', '--token=hunter2', '20000'], uid: 1000 }, { pid: 4243, comm: 'python3', cmdline: ['python3'], uid: 1000 }]], [3, []]]);
  const found = findForeign({ rows, treeInodes: new Set([1]), owners });
  assert.deepEqual(found.map((f) => [f.inode, f.pid, f.pids, f.reuseport, f.family]), [
    [2, 4242, [4242, 4243], true, 4],
    [3, undefined, [], false, 6],
  ]);
  assert.equal(found[0]!.message, 'pid 4242 (python3 srv.py --token=<redacted> 20000) uid 1000 (with pids 4243) listening on 127.0.0.1:20000, and shares the listener through SO_REUSEPORT: the kernel splits new connections between it and the service');
  assert.equal(found[1]!.message, 'a process of uid 1001 (not visible to berth) listening on [::1]:20000');
  assert.match(foreignWarning('web', found), /^web: port 20000 has listeners outside the service's process tree: pid 4242 .*; a process of uid 1001/);
  assert.deepEqual(findForeign({ rows: [rows[0]!], treeInodes: new Set([1]), owners: new Map() }), [], 'the tree alone: nothing');
});

test('strict: at the top level it is every service\'s default, a service\'s own wins; anything but true/false is 65 with the line', () => {
  const text = (top: string, own: string) => `${top}\nservices:\n  a:\n    command: [x]\n${own}  b:\n    command: [y]\n`;
  const spec = parseStack(text('strict: true', '    strict: false\n'), 's.yaml', '/tmp');
  assert.equal(spec.strict, true);
  assert.deepEqual(spec.services.map((s) => [s.name, s.strict]), [['a', false], ['b', true]]);
  assert.deepEqual(parseStack(text('', ''), 's.yaml', '/tmp').services.map((s) => s.strict), [undefined, undefined]);
  for (const [top, own, line] of [['strict: yes please', '', 1], ['', '    strict: 1\n', 5]] as const) {
    assert.throws(() => parseStack(text(top, own), 's.yaml', '/tmp'), (e: unknown) => e instanceof BerthError && e.exitCode === EXIT.DATAERR && new RegExp(`^s\\.yaml:${line}: .*strict must be true`).test(e.message));
  }
});

test('shared strays: replicas on one port are one line (also when one joins later); a port of one replica keeps its own line', async () => {
  const { SharedStrays, sharedStrayLine } = await import('../src/stack/run/shared-strays.js');
  const rep = (label: string) => ({ label, svc: { spec: { name: label.split('/')[0] } } }) as never;
  const f = (port: number, message: string) => ({ port, address: '127.0.0.1', ephemeral: false, message });
  const said: string[] = [];
  const ss = new SharedStrays((m) => said.push(m), () => true);
  ss.add(rep('caddy/0'), [f(2019, 'c0 2019'), f(9000, 'c0 9000')], 'c0 both');
  ss.add(rep('caddy/1'), [f(2019, 'c1 2019')], 'c1 2019');
  ss.flush();
  assert.deepEqual(said, [sharedStrayLine(2019, [{ label: 'caddy/0', service: 'caddy', address: '127.0.0.1' }, { label: 'caddy/1', service: 'caddy', address: '127.0.0.1' }]), 'c0 9000']);
  assert.match(said[0]!, /^caddy\/0 and caddy\/1 all listen on 127\.0\.0\.1:2019, outside their ports, and share it through SO_REUSEPORT: .*add a port entry to service caddy \(ports: \{ …, p2019: 1 \}/);
  said.length = 0;
  ss.add(rep('caddy/2'), [f(2019, 'c2 2019')], 'c2 2019');
  ss.flush();
  assert.equal(said.length, 1);
  assert.match(said[0]!, /^caddy\/0, caddy\/1 and caddy\/2 all listen on 127\.0\.0\.1:2019/);
});
