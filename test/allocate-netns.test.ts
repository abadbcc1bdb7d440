/**
 * reserve() against a real kernel inside a network namespace made for the test
 * (ip_local_port_range 20000-20999, ip_local_reserved_ports 20100-20109 there only).
 * One run of test/fixtures/scripts/allocate-netns.ts does the work; each test checks
 * one behaviour in its output.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, test, type TestContext } from 'node:test';
import { netnsUnavailable, requireNetns, runInNetns, tsNode } from './helpers/netns.js';

interface Outcome {
  ok: boolean;
  ports?: number[];
  exitCode?: number;
  message?: string;
  report?: { excluded: { inUse: { port: number; state: string; pid?: number }[]; ephemeral: number } };
}

let out: Record<string, unknown> = {};

before(async () => {
  if (netnsUnavailable() !== undefined) return;
  const script = join(import.meta.dirname, 'fixtures', 'scripts', 'allocate-netns.ts');
  const r = await runInNetns({ ephemeral: '20000 20999', reserved: '20100-20109' }, tsNode(script), { timeoutMs: 60_000 });
  assert.equal(r.code, 0, `scenario script failed (${r.code ?? r.signal}): ${r.stderr}`);
  out = JSON.parse(r.stdout) as Record<string, unknown>;
});

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

  test('a live holder’s lease blocks; the end of its owner or ttl frees the port within a second; a set in progress is retried, then named', (t) => {
    if (!ns(t)) return;
    const live = o('liveLease');
    assert.equal(live.exitCode, 69);
    assert.match(live.message!, new RegExp(`30010 leased to pid ${out.sleeperPid as number} "blocker"`));
    assert.deepEqual(o('liveLeaseRange').ports, [30011]);
    assert.equal(out.leasedWhileOwnerLives, true);
    assert.ok((out.ownerGoneFreedMs as number) < 1000, `owner death freed the lease after ${out.ownerGoneFreedMs} ms`);
    assert.deepEqual(o('deadOwner').ports, [30012]);
    assert.equal(out.leasedWithinTtl, true);
    assert.ok((out.ttlFreedMs as number) < 1500, `the ttl lease ended after ${out.ttlFreedMs} ms`);
    assert.deepEqual(o('expired').ports, [30013]);
    const ip = o('inProgress');
    assert.equal(ip.exitCode, 69);
    assert.match(ip.message!, /30014 being allocated by berth pid 4242 of uid 4321 \(a set in progress\).*still being allocated when berth gave up/);
    assert.ok((out.inProgressWaitedMs as number) >= 100, `a set in progress is transient: retried for the contention budget (waited ${out.inProgressWaitedMs} ms)`);
    assert.deepEqual(o('inProgressDone').ports, [30014]);
    assert.deepEqual(o('garbage').ports, [30015], 'malformed names near a port do not take it');
  });

  test('a held port cannot be bound by anyone; unhold keeps the lease; release ends it (twice is fine)', (t) => {
    if (!ns(t)) return;
    assert.equal(typeof out.heldFd, 'number');
    assert.deepEqual(out.bindWhileHeld, { v4loop: 'EADDRINUSE', v4any: 'EADDRINUSE', v6any: 'EADDRINUSE' });
    const lease = out.heldLease as Record<string, unknown>;
    assert.equal(lease.pid, out.sleeperPid);
    assert.equal(lease.state, 'live');
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

  test('hold: false returns a lease with the socket closed; a ttl lease says its expiry and release ends it', (t) => {
    if (!ns(t)) return;
    const h = out.holdFalse as { fd: number | null; bind: string; lease: Record<string, unknown> };
    assert.equal(h.fd, null);
    assert.equal(h.bind, 'ok');
    assert.equal(h.lease.pid, undefined);
    assert.equal(typeof h.lease.expiresAt, 'number');
    assert.ok(Math.abs((h.lease.expiresAt as number) - Date.now() - 60_000) < 60_000);
    assert.equal(out.ttlLeaseAfterRelease, true, 'release() ends the holder of a ttl lease');
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
