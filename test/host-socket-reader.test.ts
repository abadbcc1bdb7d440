/**
 * The filtered socket reader (src/host/socket-reader.ts) on live namespaces: sock_diag through
 * `ss` and /proc/net/tcp{,6} must give the same rows — every state loopback can hold, IPv4,
 * IPv6 and v4-mapped, listeners, TIME_WAIT, another user's sockets — with and without filters,
 * and while other sockets churn next to them. The /proc fallback runs here too: forced, with
 * `ss` missing, and with an `ss` that fails.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { readHostMap } from '../src/host/read-host.js';
import { readSockets, readSocketsAsync, resetSsUnusable, SS_MIN_ROWS, ssUnusable } from '../src/host/socket-reader.js';
import { requireNetns, runInNetns, tsNode } from './helpers/netns.js';

const script = join(import.meta.dirname, 'fixtures', 'scripts', 'socket-reader-compare.ts');
const ALL_STATES = ['CLOSE_WAIT', 'ESTABLISHED', 'FIN_WAIT1', 'FIN_WAIT2', 'LAST_ACK', 'LISTEN', 'SYN_RECV', 'SYN_SENT', 'TIME_WAIT'];

interface Both {
  ss: string[];
  proc: string[];
  ssAsync: string[];
  procAsync: string[];
  skipped: [number, number, number, number];
}

async function inNetns<T>(mode: string): Promise<T> {
  // Syncookies off: a full accept queue then drops SYNs, which is how SYN_SENT is held.
  const argv = ['sh', '-c', 'echo 0 > /proc/sys/net/ipv4/tcp_syncookies && exec "$@"', 'sh', ...tsNode(script, mode)];
  const r = await runInNetns({}, argv, { timeoutMs: 120_000, env: { ...process.env, BERTH_SOCKET_READER: '' } });
  assert.equal(r.code, 0, `socket-reader-compare.ts ${mode} failed (${r.code ?? r.signal}): ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

test('ss and /proc give the same rows: every state, both families, v4-mapped, filters', async (t) => {
  if (!requireNetns(t)) return;
  const out = await inNetns<{ cases: Record<string, Both> }>('states');
  for (const [name, c] of Object.entries(out.cases)) {
    assert.deepEqual(c.ss, c.proc, name);
    assert.deepEqual(c.ssAsync, c.ss, `${name}: async ss`);
    assert.deepEqual(c.procAsync, c.proc, `${name}: async /proc`);
    assert.deepEqual(c.skipped, [0, 0, 0, 0], name);
  }
  const all = out.cases.all!.proc;
  const states = new Set(all.map((l) => l.split(' ')[5]));
  assert.deepEqual([...states].sort(), ALL_STATES);
  const has = (re: RegExp) => assert.ok(all.some((l) => re.test(l)), `a row like ${re}: ${all.join('\n')}`);
  has(/^6 ::ffff:127\.0\.0\.1 20002 ::ffff:127\.0\.0\.1 \d+ ESTABLISHED/);
  has(/^6 :: 20002 :: 0 LISTEN/);
  has(/^4 0\.0\.0\.0 20003 0\.0\.0\.0 0 LISTEN/);
  has(/^6 :: 20008 :: 0 LISTEN uid=65534 /);
  has(/^4 127\.0\.0\.1 20000 127\.0\.0\.1 \d+ TIME_WAIT uid=0 ino=0$/);
  assert.equal(out.cases.range!.ss.length, all.filter((l) => +l.split(' ')[2]! <= 20019).length);
  assert.deepEqual(out.cases.none!.ss, []);
  assert.ok(out.cases.listen!.ss.every((l) => l.includes(' LISTEN ')));
  assert.equal(out.cases.listen!.ss.length, all.filter((l) => l.includes(' LISTEN ')).length);
});

test('ss and /proc agree on steady sockets while thousands of connections churn next to them', async (t) => {
  if (!requireNetns(t)) return;
  const out = await inNetns<{ rounds: { stable: Both; churn: Both }[]; connections: number }>('churn');
  assert.ok(out.connections > 100, `churn made ${out.connections} connections`);
  assert.equal(out.rounds.length, 40);
  let repeated = 0;
  for (const [i, r] of out.rounds.entries()) {
    // /proc/net/tcp is read in several read()s once the churn's TIME_WAITs make it big, and the
    // kernel resumes each at a bucket and an offset into it, so rows that moved meanwhile come
    // twice: /proc may repeat a row, ss (one filtered dump) does not.
    const distinct = [...new Set(r.stable.proc)];
    repeated += r.stable.proc.length - distinct.length;
    assert.deepEqual(r.stable.ss, distinct, `round ${i}`);
    assert.equal(new Set(r.stable.ss).size, r.stable.ss.length, `round ${i}: ss repeats no row`);
    // The async pair is compared with itself: the script's TIME_WAIT may expire (60 s) between pairs on a loaded host.
    assert.deepEqual(r.stable.ssAsync, [...new Set(r.stable.procAsync)], `round ${i}: async`);
    // The churning ports differ between the reads by design; every row must still parse.
    assert.deepEqual(r.churn.skipped, [0, 0, 0, 0], `round ${i}`);
    for (const l of [...r.churn.ss, ...r.churn.proc, ...r.churn.ssAsync, ...r.churn.procAsync]) {
      const port = Number(l.split(' ')[2]);
      assert.ok(port >= 20100 && port <= 20199, l);
    }
  }
  assert.ok(out.rounds.some((r) => r.churn.ss.length > 0), 'the churn was seen');
  t.diagnostic(`${out.connections} connections churned; /proc repeated ${repeated} steady rows over ${out.rounds.length} rounds`);
});

test('a filtered read picks ss from SS_MIN_ROWS sockets on, /proc below; unfiltered reads stay on /proc', async (t) => {
  if (!requireNetns(t)) return;
  const out = await inNetns<{ small: Record<string, unknown>; big: Record<string, unknown> }>('auto');
  assert.ok((out.big.size as number) >= SS_MIN_ROWS, JSON.stringify(out.big));
  for (const tail of ['', 'Async']) {
    assert.equal(out.small[`filtered${tail}`], 'proc');
    assert.equal(out.small[`listen${tail}`], 'proc');
    assert.equal(out.small[`all${tail}`], 'proc');
    assert.equal(out.big[`filtered${tail}`], 'ss');
    assert.equal(out.big[`listen${tail}`], 'ss');
    assert.equal(out.big[`all${tail}`], 'proc');
  }
});

test('fallback: /proc when forced, when ss is missing, and when ss fails', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-ss-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
    resetSsUnusable();
  });
  const ports = [{ lo: 1, hi: 65535 }];
  const forced = readSockets({ localPorts: ports, via: 'proc' });
  assert.equal(forced.via, 'proc');
  const saved = process.env.BERTH_SOCKET_READER;
  process.env.BERTH_SOCKET_READER = 'proc';
  try {
    assert.equal(readSockets({ localPorts: ports }).via, 'proc');
    assert.equal(readHostMap({ localPorts: ports }).via, 'proc');
  } finally {
    if (saved === undefined) delete process.env.BERTH_SOCKET_READER;
    else process.env.BERTH_SOCKET_READER = saved;
  }

  resetSsUnusable();
  const missing = readSockets({ localPorts: ports, via: 'ss', ssPath: join(dir, 'no-such-ss') });
  assert.equal(missing.via, 'proc');
  assert.match(ssUnusable() ?? '', /no-such-ss: .*ENOENT/);
  // Given up for this process: even a working ss is not tried again.
  assert.equal(readSockets({ localPorts: ports, via: 'ss' }).via, 'proc');

  resetSsUnusable();
  const failing = join(dir, 'ss');
  writeFileSync(failing, '#!/bin/sh\necho "Cannot open netlink socket: Protocol not supported" >&2\nexit 1\n');
  chmodSync(failing, 0o755);
  const refused = readSockets({ localPorts: ports, via: 'ss', ssPath: failing });
  assert.equal(refused.via, 'proc');
  assert.match(ssUnusable() ?? '', /exit 1: Cannot open netlink socket/);
  assert.deepEqual(new Set(refused.rows.map((r) => r.inode)), new Set(forced.rows.map((r) => r.inode)));

  // A fixture tree is never read through ss (ss sees this process's namespace, not the tree's).
  resetSsUnusable();
  const tree = readSockets({ procRoot: join(import.meta.dirname, 'fixtures', 'proc-basic'), localPorts: ports, via: 'ss' });
  assert.equal(tree.via, 'proc');
  assert.equal(tree.rows.length, 14);
});

test('fallback, async: /proc when ss is missing or fails, and ss given up for the sync reader too', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-ss-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
    resetSsUnusable();
  });
  const ports = [{ lo: 1, hi: 65535 }];
  assert.equal((await readSocketsAsync({ localPorts: ports, via: 'proc' })).via, 'proc');

  resetSsUnusable();
  const missing = await readSocketsAsync({ localPorts: ports, via: 'ss', ssPath: join(dir, 'no-such-ss') });
  assert.equal(missing.via, 'proc');
  assert.match(ssUnusable() ?? '', /no-such-ss: .*ENOENT/);
  assert.equal(readSockets({ localPorts: ports, via: 'ss' }).via, 'proc');
  assert.equal((await readSocketsAsync({ localPorts: ports, via: 'ss' })).via, 'proc');

  resetSsUnusable();
  const failing = join(dir, 'ss');
  writeFileSync(failing, '#!/bin/sh\necho "Cannot open netlink socket: Protocol not supported" >&2\nexit 1\n');
  chmodSync(failing, 0o755);
  const refused = await readSocketsAsync({ localPorts: ports, via: 'ss', ssPath: failing });
  assert.equal(refused.via, 'proc');
  assert.match(ssUnusable() ?? '', /exit 1: Cannot open netlink socket/);

  resetSsUnusable();
  const killed = join(dir, 'ss-killed');
  writeFileSync(killed, '#!/bin/sh\nkill -9 $$\n');
  chmodSync(killed, 0o755);
  assert.equal((await readSocketsAsync({ localPorts: ports, via: 'ss', ssPath: killed })).via, 'proc');
  assert.match(ssUnusable() ?? '', /SIGKILL/);

  // A fixture tree is never read through ss, async either.
  resetSsUnusable();
  const tree = await readSocketsAsync({ procRoot: join(import.meta.dirname, 'fixtures', 'proc-basic'), localPorts: ports, via: 'ss' });
  assert.equal(tree.via, 'proc');
  assert.equal(tree.rows.length, 14);
});
