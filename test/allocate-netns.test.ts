/**
 * reserve() against a real kernel inside a network namespace made for the test
 * (ip_local_port_range 20000-20999, ip_local_reserved_ports 20100-20109 there only).
 * One run of test/fixtures/scripts/allocate-netns.ts does the work; each test checks
 * one behaviour in its output.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import { netnsUnavailable, requireNetns, runInNetns, tsNode } from './helpers/netns.js';

interface Outcome {
  ok: boolean;
  ports?: number[];
  exitCode?: number;
  message?: string;
  report?: { excluded: { inUse: { port: number; state: string; pid?: number }[]; ephemeral: number } };
}

let out: Record<string, unknown> = {};
let work: string;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'berth-netns-'));
  if (netnsUnavailable() !== undefined) return;
  const script = join(import.meta.dirname, 'fixtures', 'scripts', 'allocate-netns.ts');
  const r = await runInNetns({ ephemeral: '20000 20999', reserved: '20100-20109' }, tsNode(script, join(work, 'state')), { timeoutMs: 60_000 });
  assert.equal(r.code, 0, `scenario script failed (${r.code ?? r.signal}): ${r.stderr}`);
  out = JSON.parse(r.stdout) as Record<string, unknown>;
});

after(() => rmSync(work, { recursive: true, force: true }));

const o = (k: string) => out[k] as Outcome;
const range = (lo: number, hi: number) => Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
const ns = (t: TestContext) => requireNetns(t);

describe('reserve in a network namespace', () => {
  test('ephemeral ports are skipped and reserved ports inside the ephemeral range are used', (t) => {
    if (!ns(t)) return;
    assert.deepEqual(o('mixed').ports, [...range(19990, 19999), ...range(20100, 20109)]);
    const more = o('mixedOneMore');
    assert.equal(more.exitCode, 69);
    assert.match(more.message!, /only 20 usable ports in range 19990-20120 \(131 considered\), needed 21/);
    assert.match(more.message!, /111 inside the ephemeral range 20000-20999/);
  });

  test('a band wholly inside the unreserved ephemeral range fails with 69 and says what to do', (t) => {
    if (!ns(t)) return;
    const b = o('bandInEphemeral');
    assert.equal(b.ok, false);
    assert.equal(b.exitCode, 69);
    assert.match(b.message!, /no usable port in band engines \(20500-20600\)/);
    assert.match(b.message!, /101 inside the ephemeral range 20000-20999 \(net\.ipv4\.ip_local_port_range\)/);
    assert.match(b.message!, /sysctl -w net\.ipv4\.ip_local_reserved_ports=20100-20109,20500-20600/);
    assert.match(b.message!, /--allow-ephemeral/);
    assert.equal(b.report?.excluded.ephemeral, 101, 'details carry the report');
    assert.deepEqual(o('allowEphemeral').ports, [20500, 20501], '--allow-ephemeral hands them out');
  });

  test('TIME_WAIT, dual-stack [::] and 127.0.0.1 listeners are skipped', (t) => {
    if (!ns(t)) return;
    assert.equal(out.nodeBindsOverTimeWait, true, 'a Node listen() alone would take the TIME_WAIT port');
    assert.deepEqual(o('busyRange').ports, [30000, 30002, 30004, 30006]);
    const many = o('busyRangeTooMany');
    assert.equal(many.exitCode, 69);
    assert.match(many.message!, /3 in use: 30001 TIME_WAIT by kernel-held, closing; 30003 LISTEN by pid \d+ \(.*node/);
  });

  test('an explicit busy port names its holder', (t) => {
    if (!ns(t)) return;
    const pids = out.listenerPids as { v4: number; v6: number };
    assert.equal(o('explicitV4').exitCode, 69);
    assert.match(o('explicitV4').message!, new RegExp(`port 30005 is not available: it is in use: 30005 LISTEN by pid ${pids.v4} \\(.*node -e`));
    assert.match(o('explicitV6').message!, new RegExp(`30003 LISTEN by pid ${pids.v6} `));
    assert.match(o('explicitTimeWait').message!, /port 30001 is not available: it is in use: 30001 TIME_WAIT/);
  });

  test('a live owner’s lease blocks; dead-owner, expired, reused-pid and garbage leases are reclaimed', (t) => {
    if (!ns(t)) return;
    const live = o('liveLease');
    assert.equal(live.exitCode, 69);
    assert.match(live.message!, new RegExp(`30010 leased to pid ${out.sleeperPid as number} "blocker".*berth release --port 30010`));
    assert.deepEqual(o('liveLeaseRange').ports, [30011]);
    assert.deepEqual(o('deadOwner').ports, [30012]);
    assert.deepEqual(o('expired').ports, [30013]);
    assert.deepEqual(o('pidReused').ports, [30014], 'same pid, different start time: not the owner');
    assert.deepEqual(o('garbage').ports, [30015]);
  });

  test('a held port cannot be bound by anyone; unhold keeps the lease; release ends it (twice is fine)', (t) => {
    if (!ns(t)) return;
    assert.equal(typeof out.heldFd, 'number');
    assert.deepEqual(out.bindWhileHeld, { v4loop: 'EADDRINUSE', v4any: 'EADDRINUSE', v6any: 'EADDRINUSE' });
    const lease = out.heldLease as Record<string, unknown>;
    assert.equal(lease.pid, out.sleeperPid);
    assert.equal(typeof lease.pidStart, 'number');
    assert.equal(lease.expiresAt, undefined, 'an owned lease needs no expiry');
    assert.equal(lease.name, 'svc');
    assert.match(lease.netns as string, /^net:\[\d+\]$/);
    assert.equal(out.heldFdAfterUnhold, null);
    assert.equal(out.leaseAfterUnhold, true);
    assert.equal(out.bindAfterUnhold, 'ok');
    assert.equal(o('leasedWhileUnheld').exitCode, 69, 'the lease still protects the port after unhold');
    assert.equal(out.leaseAfterRelease, false);
  });

  test('a connection to a hold is reset, leaving no TIME_WAIT that would block the service', (t) => {
    if (!ns(t)) return;
    assert.equal(out.connectToHold, 'ECONNRESET');
    assert.deepEqual(out.rowsAfterProbe, ['LISTEN'], 'only the hold itself');
  });

  test('holdPort rejects with the error code and never falls back to another port', (t) => {
    if (!ns(t)) return;
    assert.equal(out.holdBusy, 'EADDRINUSE');
    assert.equal(out.holdZero, 'EINVAL');
  });

  test('with net.ipv6.bindv6only=1 the hold is still dual-stack', (t) => {
    if (!ns(t)) return;
    assert.deepEqual(out.bindV6onlyHeld, { v4any: 'EADDRINUSE', v4loop: 'EADDRINUSE', v6any: 'EADDRINUSE' });
    assert.equal(out.bindV6onlyReleased, 'ok');
  });

  test('hold: false returns a lease with the socket closed; ownerless leases expire', (t) => {
    if (!ns(t)) return;
    const h = out.holdFalse as { fd: number | null; bind: string; lease: Record<string, unknown> };
    assert.equal(h.fd, null);
    assert.equal(h.bind, 'ok');
    assert.equal(h.lease.pid, undefined);
    assert.equal(typeof h.lease.expiresAt, 'number');
    assert.ok((h.lease.expiresAt as number) - (h.lease.createdAt as number) === 60_000);
  });

  test('options: a dead owner pid is a usage error; privileged ports need root and allowPrivileged; random stays in range', (t) => {
    if (!ns(t)) return;
    assert.equal(o('deadOwnerOption').exitCode, 64);
    assert.match(o('privileged').message!, /below net\.ipv4\.ip_unprivileged_port_start=1024/);
    if (process.geteuid?.() === 0) assert.deepEqual(o('privilegedRoot').ports, [80]);
    const r = o('random').ports!;
    assert.equal(r.length, 3);
    assert.ok(r.every((p) => p >= 40000 && p <= 49999));
  });
});
