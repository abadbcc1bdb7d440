/**
 * Many allocators at once, inside network namespaces made for the test: every port handed
 * out is distinct, and many on one port have exactly one winner, hostile names around it or not.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { build } from 'esbuild';
import { requireNetns, runInNetns } from './helpers/netns.js';
import type { ChildResult } from './fixtures/scripts/allocate-swarm.js';

interface SwarmOutput {
  results: ChildResult[];
  codes: (number | null)[];
  leaseCreatedBy?: number;
  whileHeld: string[];
  afterRelease: string[];
  ms: { spawnToReady: number; goToAllAnswered: number; total: number };
}

let work: string;
let bundle: string;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'berth-race-'));
  bundle = join(work, 'swarm.mjs');
  // One bundled file: each of the many children starts without tsx's compile step.
  await build({
    entryPoints: [join(import.meta.dirname, 'fixtures', 'scripts', 'allocate-swarm.ts')],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
  });
});

after(() => rmSync(work, { recursive: true, force: true }));

async function swarm(sysctls: { ephemeral?: string; reserved?: string }, cfg: object): Promise<SwarmOutput> {
  const r = await runInNetns(sysctls, [process.execPath, bundle, 'driver', JSON.stringify(cfg)], { timeoutMs: 60_000 });
  assert.equal(r.code, 0, `driver failed (${r.code ?? r.signal}): ${r.stderr}`);
  return JSON.parse(r.stdout) as SwarmOutput;
}

describe('allocation races', () => {
  test('64 processes asking for 4 ports each from one range at once all get distinct ports', async (t) => {
    if (!requireNetns(t)) return;
    const out = await swarm({ ephemeral: '30000 60999' }, { children: 64, child: { reserve: { source: { kind: 'range', range: { lo: 20000, hi: 20999 } }, count: 4 } } });
    const failed = out.results.filter((r) => !r.ok);
    assert.deepEqual(failed, [], 'no allocator fails while the range has room');
    const ports = out.results.flatMap((r) => r.ports ?? []);
    assert.equal(ports.length, 256);
    assert.equal(new Set(ports).size, 256, 'all ports distinct');
    assert.ok(ports.every((p) => p >= 20000 && p <= 20999));
    assert.equal(out.whileHeld.filter((n) => n.endsWith(':live')).length, 256, 'one committed lease per port while held');
    assert.deepEqual(out.afterRelease, [], 'release ends every lease');
    assert.ok(out.codes.every((c) => c === 0));
    const slowest = Math.max(...out.results.map((r) => r.ms));
    t.diagnostic(`spawn→ready ${out.ms.spawnToReady.toFixed(0)}ms, go→all answered ${out.ms.goToAllAnswered.toFixed(0)}ms, slowest reserve ${slowest.toFixed(0)}ms, total ${out.ms.total.toFixed(0)}ms`);
  });

  test('32 processes on one port at once: exactly one winner, whose lease it is', async (t) => {
    if (!requireNetns(t)) return;
    const port = 21000;
    const out = await swarm({ ephemeral: '30000 60999' }, { children: 32, leasePort: port, child: { reserve: { source: { kind: 'port', port }, contentionMs: 300 } } });
    const winners = out.results.filter((r) => r.ok);
    assert.equal(winners.length, 1, `exactly one winner, got ${winners.length}: ${JSON.stringify(out.results.filter((r) => !r.ok).slice(0, 3))}`);
    assert.deepEqual(winners[0]!.ports, [port]);
    assert.equal(out.leaseCreatedBy, winners[0]!.pid, 'the lease is the winner’s');
    for (const r of out.results.filter((x) => !x.ok)) {
      assert.equal(r.exitCode, 69, r.message);
      assert.match(r.message!, new RegExp(`port ${port} is not available`));
    }
    assert.deepEqual(out.whileHeld, [`${port}:live`]);
    assert.deepEqual(out.afterRelease, []);
    t.diagnostic(`go→all answered ${out.ms.goToAllAnswered.toFixed(0)}ms, total ${out.ms.total.toFixed(0)}ms`);
  });

  test('32 processes on a port with malformed and forged names around it: one winner', async (t) => {
    if (!requireNetns(t)) return;
    const port = 21001;
    const plant = ['berth/v1/r/forged/0/1/uid=0/pid=1/kind=single/ports=21002', 'berth/v1/p/021001', 'berth/v1/a/0/1/21001-21001/x', 'berth/v1/r/zz/0/1/garbage'];
    const out = await swarm({}, { children: 32, leasePort: port, plant, child: { reserve: { source: { kind: 'port', port }, contentionMs: 300 } } });
    assert.equal(out.results.filter((r) => r.ok).length, 1);
    assert.equal(out.leaseCreatedBy, out.results.find((r) => r.ok)!.pid);
    assert.deepEqual(out.afterRelease, []);
  });
});
