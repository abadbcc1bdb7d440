import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { findSocketOwners, parseCmdline, parseStatusUid, socketInode } from '../src/host/owners.js';
import { parseTcpTable } from '../src/host/socket-table.js';

const root = fileURLToPath(new URL('./fixtures/proc-basic', import.meta.url));

const NODE = { pid: 4747, comm: 'node', cmdline: ['node', 'cap.mjs'], uid: 0 };
const PYTHON = { pid: 4800, comm: 'python3', cmdline: ['python3', '-m', 'http.server', '--bind', '::'], uid: 1000 };

test('socketInode accepts only "socket:[N]"', () => {
  assert.equal(socketInode('socket:[9228]'), 9228);
  assert.equal(socketInode('socket:[0]'), 0);
  assert.equal(socketInode('pipe:[9228]'), undefined);
  assert.equal(socketInode('socket:[]'), undefined);
  assert.equal(socketInode('socket:[12a]'), undefined);
  assert.equal(socketInode('socket:[12'), undefined);
  assert.equal(socketInode('/dev/null'), undefined);
});

test('parseStatusUid takes the real uid; parseCmdline splits on NUL', () => {
  assert.equal(parseStatusUid('Name:\tx\nUid:\t1000\t0\t0\t0\nGid:\t5\n'), 1000);
  assert.equal(parseStatusUid('Uid:\t7\t7\t7\t7\n'), 7);
  assert.equal(parseStatusUid('Name:\tx\nGid:\t5\n'), undefined);
  assert.equal(parseStatusUid('Name:\tx\nUid:\t\n'), undefined);
  assert.deepEqual(parseCmdline('python3\0-c\0print(1)\0'), ['python3', '-c', 'print(1)']);
  assert.deepEqual(parseCmdline('a b\0\0c\0'), ['a b', '', 'c']); // empty argv entries survive
  assert.deepEqual(parseCmdline('no-trailing-nul'), ['no-trailing-nul']); // process rewrote its argv
  assert.deepEqual(parseCmdline(''), []); // kernel thread
});

test('fixture: every socket fd found, shared sockets list every holder in pid order', () => {
  const owners = findSocketOwners(root);
  const expected = new Map<number, unknown[]>();
  for (let ino = 9228; ino <= 9238; ino++) expected.set(ino, [NODE]);
  expected.set(9230, [NODE, PYTHON]);
  expected.set(77777, [PYTHON]);
  // 4801 has no status file: uid comes from its directory's owner
  const uid4801 = statSync(`${root}/4801`).uid;
  expected.set(9238, [NODE, { pid: 4801, comm: 'sleep', cmdline: ['sleep', 'infinity'], uid: uid4801 }]);
  assert.deepEqual(owners, expected);
  // one object per process, shared across its inodes
  assert.equal(owners.get(9228)?.[0], owners.get(9229)?.[0]);
});

test('fixture: only the asked inodes are looked up', () => {
  const owners = findSocketOwners(root, new Set([9230, 8984, 123]));
  assert.deepEqual([...owners.keys()], [9230]);
  assert.deepEqual(owners.get(9230), [NODE, PYTHON]);
  assert.equal(findSocketOwners(root, new Set()).size, 0);
});

test('a missing proc root gives no owners rather than an error', () => {
  assert.equal(findSocketOwners(`${root}/no-such-dir`).size, 0);
});

test('real /proc: this process owns the listener it opened', async (t) => {
  const server = net.createServer();
  await new Promise<void>((res) => server.listen({ host: '127.0.0.1', port: 0 }, res));
  t.after(() => server.close());
  const port = (server.address() as net.AddressInfo).port;
  const row = parseTcpTable(readFileSync('/proc/net/tcp', 'latin1'), 4).rows.find(
    (r) => r.localPort === port && r.state === 'LISTEN',
  );
  assert.ok(row, `listener on ${port} not in /proc/net/tcp`);
  const owners = findSocketOwners('/proc', new Set([row.inode]));
  const mine = owners.get(row.inode)?.find((o) => o.pid === process.pid);
  assert.ok(mine, `pid ${process.pid} not among owners of inode ${row.inode}`);
  assert.equal(mine.uid, process.getuid?.());
  assert.equal(mine.comm, readFileSync('/proc/self/comm', 'utf8').trimEnd());
  assert.ok(mine.cmdline.includes(process.argv[1] ?? ''), `${JSON.stringify(mine.cmdline)} lacks ${process.argv[1]}`);
});
