/**
 * The library face of `berth run`: launch() returns a handle whose `ready` resolves with
 * where the service is, whose `exited` settles after cleanup, and whose stop() ends the
 * service — including a daemon that double-forked into a new session.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { requireNetns, tsNode } from './helpers/netns.js';
import { netnsSh, q, sandbox, SERVICES } from './fixtures/services/launch-harness.js';

test('launch(): ready, exited, stop(), daemons, early death, a caller\'s reservation', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const argv = tsNode(join(SERVICES, 'library-driver.ts'), 'natural', 'stop', 'daemon', 'early', 'reservation');
  const r = await netnsSh({}, box, argv.map(q).join(' '), 60_000);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const o = JSON.parse(r.stdout.trim().split('\n').pop()!);

  // Service that ends by itself after the probe: status 0; the clean run's folder is removed.
  // localhost is probed as an address, never by name: the one the service listens on ([::] → ::1).
  assert.equal(o.natural.ready.host, '::1');
  assert.equal(o.natural.ready.port, 20000);
  assert.equal(o.natural.ready.name, 'node');
  assert.ok(o.natural.ready.waitedMs >= 0 && typeof o.natural.ready.readyAt === 'string');
  assert.deepEqual(o.natural.events, ['reserved', 'spawned', 'owned', 'ready', 'exited']);
  assert.equal(o.natural.end.exitCode, 0);
  assert.equal(o.natural.end.ready, true);
  assert.equal(o.natural.runDirLeft, false);

  // stop(): SIGTERM, the service's status comes back, nothing left running.
  assert.deepEqual(o.stop.events, ['reserved', 'spawned', 'owned', 'ready', 'stopping', 'exited']);
  assert.equal(o.stop.end.exitCode, 143);
  assert.equal(o.stop.pidAlive, false);

  // Double fork + setsid: the daemon is found (its parent exited 0), reported, and stopped.
  assert.notEqual(o.daemon.daemonPid, o.daemon.childPid);
  assert.ok(o.daemon.events.includes('warning'), 'the child exiting 0 with descendants left is noted');
  assert.equal(o.daemon.beforeStop, true);
  assert.equal(o.daemon.afterStop, false);
  assert.equal(o.daemon.end.exitCode, 0);

  // Early death: `ready` rejects with a LaunchError(70) naming the bundle; `exited` says the same.
  assert.equal(o.early.error.name, 'LaunchError');
  assert.equal(o.early.error.exitCode, 70);
  assert.equal(o.early.error.phase, 'ownership');
  assert.match(o.early.error.message, /exited with status 4 before it was ready[\s\S]*diagnostics: /);
  assert.equal(o.early.end.exitCode, 70);
  assert.equal(o.early.end.code, 4);
  assert.equal(o.early.bundleExists, true);

  // A reservation made by the caller is used and consumed; cmd: probe.
  assert.equal(o.reservation.ready.port, o.reservation.reserved);
  assert.equal(o.reservation.exitCode, 0);
  assert.equal(o.reservation.leaseLeft, false);
});
