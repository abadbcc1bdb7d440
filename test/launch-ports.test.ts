/**
 * launch() with port sets as a library: LaunchOptions.ports reserves the set (reserved event,
 * ReadyInfo and handle carry it; its leases end with the service), and a caller's portSet
 * with keepReservation survives the launch: re-held, the next launch comes back on the same
 * ports, and the leases go only when the caller releases them (what a stack's restarts use).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { childEnv } from '../src/launch/spawn-plan.js';
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

test('child environment of a set: LISTEN_FDS/LISTEN_FDNAMES from the handed singles, BERTH_PORT_<NAME>; no inherited LISTEN_*', () => {
  const base = { LISTEN_FDS: '9', LISTEN_FDNAMES: 'x', LISTEN_PID: '1', PATH: '/bin' };
  const env = childEnv({ base, port: 20000, envName: 'PORT', name: 'api', runId: 'r', handoff: 'fd', fdNames: ['http', 'grpc'], portEnv: { BERTH_PORT_HTTP: '20000', BERTH_PORT_GRPC: '20001' } });
  assert.equal(env.LISTEN_FDS, '2');
  assert.equal(env.LISTEN_FDNAMES, 'http:grpc');
  assert.equal(env.LISTEN_PID, undefined, 'the shim sets it to the service\'s own pid');
  assert.equal(env.BERTH_PORT_GRPC, '20001');
  assert.equal(env.PORT, '20000');
  const one = childEnv({ base, port: 20000, envName: 'PORT', name: 'web:1', runId: 'r', handoff: 'fd' });
  assert.equal(one.LISTEN_FDS, '1');
  assert.equal(one.LISTEN_FDNAMES, 'web_1', 'one port: the fd is named for the service');
  const rel = childEnv({ base, port: 20000, envName: 'PORT', name: 'api', runId: 'r', handoff: 'release', fdNames: ['http', 'grpc'] });
  assert.equal(rel.LISTEN_FDS, undefined);
});
