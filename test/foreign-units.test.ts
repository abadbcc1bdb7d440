/**
 * Foreign listeners, the pure part (foreign.ts) on fixture rows: which ports of a replica are
 * checked, when a stranger shares the listener through SO_REUSEPORT, what the line says; and
 * the stack's `strict:` key (top level and per service) as loaded.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AssignedPorts } from '../src/allocate/port-set.js';
import { EXIT } from '../src/errors.js';
import type { SocketRow } from '../src/host/types.js';
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
