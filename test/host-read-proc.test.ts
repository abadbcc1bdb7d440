/**
 * readHostMap() against the real kernel: stopping at the first short read of a seq_file
 * (which saves a whole hash-table walk per file) must never lose a row. The work runs in a
 * fresh network namespace (test/fixtures/scripts/host-read-proc.ts) so no other socket
 * comes or goes between the two reads being compared.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { requireNetns, runInNetns, tsNode } from './helpers/netns.js';

test('readHostMap reads every row of /proc/net/tcp{,6} at every table size', async (t) => {
  if (!requireNetns(t)) return;
  const script = join(import.meta.dirname, 'fixtures', 'scripts', 'host-read-proc.ts');
  const r = await runInNetns({}, tsNode(script), { timeoutMs: 60_000 });
  assert.equal(r.code, 0, `script failed (${r.code ?? r.signal}): ${r.stderr}`);
  const out = JSON.parse(r.stdout) as { sizes: number[]; mismatches: string[] };
  assert.deepEqual(out.mismatches, []);
  assert.equal(out.sizes.length, 1 + 120 + 6);
  assert.equal(out.sizes.at(-1), 2 * (120 + 6 * 150));
});
