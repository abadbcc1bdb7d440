/**
 * The library behaves like the CLI (issue 14): reserve() and launch() without a source take
 * the default band exactly as `berth port` / `berth run` do, and the CLI's option names
 * (owner, ttl, range text, layout/band/instance, readyTimeout, stopGrace) work as given.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { requireNetns, tsNode } from './helpers/netns.js';
import { BERTH, netnsSh, q, sandbox } from './fixtures/services/launch-harness.js';

test('reserve() and launch() without a source use the default band, like the CLI; CLI option names', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const argv = tsNode(join(import.meta.dirname, 'fixtures/library/parity-driver.ts'), BERTH, box.dir);
  // Ephemeral 30000-60999: the default band is 1024-29999.
  const r = await netnsSh({ ephemeral: '30000 60999' }, box, argv.map(q).join(' '), 60_000);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const o = JSON.parse(r.stdout.trim().split('\n').pop()!);
  assert.deepEqual(o.cli.source, { kind: 'band', band: 'default', range: { lo: 1024, hi: 29999 } });
  assert.deepEqual(o.lib, o.cli, 'the library picks what the CLI picks');
  assert.deepEqual(o.named.ports, [20200, 20201]);
  assert.deepEqual(o.named.source, { kind: 'band', band: 'engines', range: { lo: 20200, hi: 20299 }, layoutFile: join(box.dir, 'layout.yaml'), instance: 2 });
  assert.equal(o.named.owner, true, 'owner: the lease lives while that pid lives');
  assert.deepEqual(o.ranged.ports, [21000]);
  assert.equal(o.ranged.expires, 30_000);
  assert.deepEqual(o.refused, { twoSources: 64, disagree: 64, badTtl: 64, badInstance: 64 });
  assert.ok(o.launch.port >= 1024 && o.launch.port <= 29999, `launch() port ${o.launch.port} is in the default band`);
  assert.equal(o.launchBadDuration, 64);
});
