/**
 * berth's own holds must not let a SO_REUSEPORT socket join them (issue 28.2): Node's
 * net.Server does not set SO_REUSEPORT, so a python3 bind with SO_REUSEPORT on a held port is
 * refused, on every address of both families for a wildcard hold and on its own address (and
 * the overlapping wildcard) for an fd-handoff hold. A python3 listener that set SO_REUSEPORT
 * itself is joined by the same probe, so the check can fail. In a network namespace.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { requireNetns, runInNetns, tsNode } from './helpers/netns.js';
import { realPython } from './fixtures/services/launch-harness.js';

test('holds: no SO_REUSEPORT join of a berth hold, either family; the control joins', async (t) => {
  if (!requireNetns(t)) return;
  const dir = join(import.meta.dirname, 'fixtures', 'scripts');
  const r = await runInNetns({}, tsNode(join(dir, 'hold-reuseport.ts'), realPython(), join(dir, 'reuseport-join.py')), { timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  const got = JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, Record<string, string>>;
  assert.equal(got.control!['127.0.0.1'], 'joined', `the probe joins a SO_REUSEPORT listener: ${r.stdout}`);
  for (const kind of ['wildcard-dual', 'wildcard-v4']) {
    for (const addr of ['0.0.0.0', '127.0.0.1', '::', '::1']) {
      // An IPv4-only hold does not cover [::1] (V6ONLY): that is a neighbour, which the foreign check sees, not a join.
      if (kind === 'wildcard-v4' && addr === '::1') continue;
      assert.equal(got[kind]![addr], 'EADDRINUSE', `${kind} joined on ${addr}: ${r.stdout}`);
    }
  }
  // An fd-handoff hold is on one address: nothing joins it there. (The kernel lets a SO_REUSEPORT
  // [::] bind sit beside a ::1 hold: a neighbour on a wider address, not its group; once the
  // service runs, the foreign check reports any listener on the port, at readiness with 69.)
  assert.equal(got['fd-127.0.0.1']!['127.0.0.1'], 'EADDRINUSE', r.stdout);
  assert.equal(got['fd-127.0.0.1']!['0.0.0.0'], 'EADDRINUSE', r.stdout);
  assert.equal(got['fd-::1']!['::1'], 'EADDRINUSE', r.stdout);
});
