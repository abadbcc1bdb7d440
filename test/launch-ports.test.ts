/**
 * launch() with port sets as a library: LaunchOptions.ports reserves the set (reserved event,
 * ReadyInfo and handle carry it; its leases end with the service), and a caller's portSet
 * with keepReservation survives the launch: re-held, the next launch comes back on the same
 * ports, and the leases go only when the caller releases them (what a stack's restarts use).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { requireNetns, tsNode } from './helpers/netns.js';
import { netnsSh, q, sandbox, SERVICES } from './fixtures/services/launch-harness.js';

test('launch(): ports reserved by launch, and a caller\'s portSet kept across two launches (keepReservation)', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const argv = tsNode(join(SERVICES, 'ports-driver.ts'), 'owned', 'kept');
  const r = await netnsSh({}, box, argv.map(q).join(' '), 90_000);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const o = JSON.parse(r.stdout.trim().split('\n').pop()!);

  const set = o.owned.reserved.ports;
  assert.deepEqual(set.map((a: { name: string; kind: string }) => [a.name, a.kind]), [['http', 'single'], ['dist', 'block']]);
  assert.equal(set[1].ports.length, 4);
  assert.equal(o.owned.reserved.port, set[0].ports[0]);
  assert.deepEqual(o.owned.ready.ports, set);
  assert.equal(o.owned.ready.port, set[0].ports[0]);
  assert.deepEqual(o.owned.handlePorts, set);
  assert.equal(o.owned.exitCode, 143);
  assert.ok(!o.owned.types.includes('audit'), 'the service listens on its primary port only');

  const http = o.kept.assigned[0].ports[0];
  assert.equal(o.kept.first.port, http);
  assert.equal(o.kept.second.port, http, 'the second launch is on the same port');
  assert.deepEqual(o.kept.second.ports, o.kept.assigned);
  assert.deepEqual(o.kept.exitCodes, [143, 143]);
  assert.equal(o.kept.leasesAfterFirst, 5, 'keepReservation: the leases outlive the launch');
  assert.equal(o.kept.leasesAfterSecond, 5);
  assert.equal(o.kept.leasesAfterRelease, 0);
});
