import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { BerthError, EXIT } from '../src/errors.js';
import { describeOwner, readHostMap, readNetns, socketsOnPort } from '../src/host/index.js';
import type { HostMap, SocketRow } from '../src/host/host-map.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

test('fixture tree: both tables, sysctls, netns; no owners unless asked', () => {
  const map = readHostMap({ procRoot: fixture('proc-basic') });
  assert.equal(map.netns, 'net:[4026531833]');
  assert.equal(map.ipv6, true);
  assert.equal(map.sockets.length, 9 + 5);
  assert.equal(map.skippedLines, 5 + 1);
  assert.deepEqual(map.ephemeral, { lo: 32768, hi: 60999 });
  assert.equal(map.reserved.length, 3);
  assert.equal(map.unprivilegedStart, 1024);
  assert.equal(map.owners, undefined);
  assert.ok(!Number.isNaN(Date.parse(map.readAt)));
  // v4 rows first, then v6
  assert.deepEqual(map.sockets.map((r) => r.family), [4, 4, 4, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6]);
});

test('socketsOnPort finds every state and family on a port', () => {
  const map = readHostMap({ procRoot: fixture('proc-basic') });
  const on = (p: number) => socketsOnPort(map, p).map((r) => `${r.family} ${r.localAddress} ${r.state}`);
  assert.deepEqual(on(41003), ['6 :: LISTEN', '6 ::ffff:127.0.0.1 ESTABLISHED']);
  assert.deepEqual(on(41001), ['4 127.0.0.1 LISTEN', '4 127.0.0.1 ESTABLISHED']);
  assert.deepEqual(on(49864), ['4 127.0.0.1 TIME_WAIT']);
  assert.deepEqual(on(80), []);
});

test('owners: true looks up every inode in the table; a set only those', () => {
  const all = readHostMap({ procRoot: fixture('proc-basic'), owners: true });
  // 77777 is held by pid 4800 but is no TCP socket in the tables, so it is not looked up
  assert.deepEqual([...(all.owners?.keys() ?? [])].sort((a, b) => a - b), [9228, 9229, 9230, 9231, 9232, 9233, 9234, 9235, 9236, 9237, 9238]);
  const some = readHostMap({ procRoot: fixture('proc-basic'), owners: new Set([9230]) });
  assert.deepEqual([...(some.owners?.keys() ?? [])], [9230]);
  const none = readHostMap({ procRoot: fixture('proc-basic'), owners: false });
  assert.equal(none.owners, undefined);
});

test('describeOwner wording', () => {
  const map = readHostMap({ procRoot: fixture('proc-basic'), owners: true });
  const row = (port: number, state: string): SocketRow => {
    const found = map.sockets.find((r) => r.localPort === port && r.state === state);
    assert.ok(found, `${port} ${state}`);
    return found;
  };
  assert.equal(describeOwner(map, row(41001, 'LISTEN')), 'pid 4747 (node) LISTEN');
  assert.equal(describeOwner(map, row(41003, 'LISTEN')), 'pid 4747 (node), pid 4800 (python3) LISTEN');
  assert.equal(describeOwner(map, row(41006, 'LISTEN')), 'uid 1000, owner not visible');
  assert.equal(describeOwner(map, row(49864, 'TIME_WAIT')), 'TIME_WAIT (no owner: kernel-held)');
  const noLookup = readHostMap({ procRoot: fixture('proc-basic') });
  assert.equal(describeOwner(noLookup, row(41006, 'LISTEN')), 'uid 1000, owner not looked up');
});

test('minimal tree: no tcp6, no reserved list, no unprivileged start, no netns', () => {
  const map = readHostMap({ procRoot: fixture('proc-minimal') });
  assert.equal(map.ipv6, false);
  assert.equal(map.netns, 'unknown');
  assert.equal(map.sockets.length, 1);
  assert.equal(map.skippedLines, 0);
  assert.deepEqual(map.reserved, []);
  assert.equal(map.unprivilegedStart, 1024);
  assert.deepEqual(map.ephemeral, { lo: 9000, hi: 65000 });
});

test('bad sysctl or missing table is a BerthError naming the file', () => {
  const bad = fixture('proc-bad-sysctl');
  assert.throws(() => readHostMap({ procRoot: bad }), (e: unknown) => {
    assert.ok(e instanceof BerthError);
    assert.equal(e.exitCode, EXIT.DATAERR);
    assert.match(e.message, /proc-bad-sysctl\/sys\/net\/ipv4\/ip_local_port_range: low end 60999/);
    return true;
  });
  assert.throws(() => readHostMap({ procRoot: fixture('no-such-proc') }), (e: unknown) => {
    assert.ok(e instanceof BerthError);
    assert.equal(e.exitCode, EXIT.IOERR);
    assert.match(e.message, /no-such-proc\/net\/tcp: missing/);
    return true;
  });
});

const listen = async (opts: net.ListenOptions): Promise<net.Server> => {
  const s = net.createServer((c) => c.on('error', () => {}));
  await new Promise<void>((res, rej) => {
    s.once('error', rej);
    s.listen(opts, res);
  });
  return s;
};
const portOf = (s: net.Server | net.Socket) =>
  s instanceof net.Server ? (s.address() as net.AddressInfo).port : (s.localPort as number);
const closeAll = (servers: net.Server[]) => Promise.all(servers.map((s) => new Promise((r) => s.close(r))));

test('real /proc: listeners found with state, address and this process as owner', async (t) => {
  const servers = [await listen({ host: '127.0.0.1', port: 0 })];
  t.after(() => closeAll(servers));
  const probe = readHostMap();
  if (probe.ipv6) {
    servers.push(await listen({ host: '::', port: 0, ipv6Only: false }));
    servers.push(await listen({ host: '::1', port: 0 }));
  }
  const map = readHostMap({ owners: true });
  assert.equal(map.skippedLines, 0);
  assert.equal(map.netns, readlinkSync('/proc/self/ns/net'));
  const expectAddr = ['127.0.0.1', '::', '::1'];
  servers.forEach((s, k) => {
    const rows = socketsOnPort(map, portOf(s)).filter((r) => r.state === 'LISTEN');
    assert.equal(rows.length, 1, `one listener on ${portOf(s)}`);
    const row = rows[0] as SocketRow;
    assert.equal(row.localAddress, expectAddr[k]);
    assert.equal(row.family, k === 0 ? 4 : 6);
    assert.equal(row.uid, process.getuid?.());
    assert.ok(row.inode > 0);
    const owners = map.owners?.get(row.inode) ?? [];
    assert.ok(owners.some((o) => o.pid === process.pid), `owners of ${portOf(s)}: ${JSON.stringify(owners)}`);
    assert.match(describeOwner(map, row), new RegExp(`pid ${process.pid} \\(.+\\) LISTEN`));
  });
});

/** Poll the real table until `pick` finds a row (state transitions are not instant). */
async function waitForRow(pick: (m: HostMap) => SocketRow | undefined): Promise<SocketRow | undefined> {
  for (let i = 0; i < 100; i++) {
    const row = pick(readHostMap());
    if (row) return row;
    await new Promise((r) => setTimeout(r, 20));
  }
  return undefined;
}

test('real /proc: a client that closes first leaves TIME_WAIT on its port, with no owner', async (t) => {
  const server = await listen({ host: '127.0.0.1', port: 0 });
  t.after(() => closeAll([server]));
  const sport = portOf(server);
  const client = net.connect({ host: '127.0.0.1', port: sport });
  await new Promise<void>((res, rej) => client.once('connect', res).once('error', rej));
  const cport = portOf(client);
  const established = socketsOnPort(readHostMap(), cport);
  assert.ok(established.some((r) => r.state === 'ESTABLISHED' && r.remotePort === sport));
  // The active closer keeps TIME_WAIT: client sends FIN first; the server side answers
  // with its own FIN (allowHalfOpen is off), so the client passes FIN_WAIT2 -> TIME_WAIT.
  client.end();
  await new Promise((r) => client.once('close', r));
  const tw = await waitForRow((m) => socketsOnPort(m, cport).find((r) => r.state === 'TIME_WAIT'));
  assert.ok(tw, `no TIME_WAIT on port ${cport}`);
  assert.equal(tw.localAddress, '127.0.0.1');
  assert.equal(tw.remotePort, sport);
  assert.equal(tw.inode, 0);
  assert.equal(describeOwner({ owners: new Map() }, tw), 'TIME_WAIT (no owner: kernel-held)');
});

test('readNetns reads the real link', () => {
  assert.match(readNetns(), /^net:\[\d+\]$/);
});
