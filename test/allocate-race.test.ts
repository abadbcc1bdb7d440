/**
 * Many allocators at once, inside network namespaces made for the test: every port handed
 * out is distinct, and a stale lease reclaimed by many at once has exactly one winner.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
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

function deadPid(): number {
  const r = spawnSync('true');
  assert.ok(r.pid);
  return r.pid;
}

describe('allocation races', () => {
  test('64 processes asking for 4 ports each from one range at once all get distinct ports', async (t) => {
    if (!requireNetns(t)) return;
    const stateDir = join(work, 'swarm');
    const out = await swarm(
      { ephemeral: '30000 60999' },
      { children: 64, stateDir, child: { reserve: { source: { kind: 'range', range: { lo: 20000, hi: 20999 } }, count: 4, stateDir } } },
    );
    const failed = out.results.filter((r) => !r.ok);
    assert.deepEqual(failed, [], 'no allocator fails while the range has room');
    const ports = out.results.flatMap((r) => r.ports ?? []);
    assert.equal(ports.length, 256);
    assert.equal(new Set(ports).size, 256, 'all ports distinct');
    assert.ok(ports.every((p) => p >= 20000 && p <= 20999));
    assert.equal(out.whileHeld.filter((n) => n.endsWith('.lease')).length, 256, 'one lease file per port while held');
    assert.deepEqual(out.whileHeld.filter((n) => n.startsWith('.')), [], 'no temp files left behind');
    assert.deepEqual(out.afterRelease, [], 'release removes every lease');
    assert.ok(out.codes.every((c) => c === 0));
    const slowest = Math.max(...out.results.map((r) => r.ms));
    t.diagnostic(`spawn→ready ${out.ms.spawnToReady.toFixed(0)}ms, go→all answered ${out.ms.goToAllAnswered.toFixed(0)}ms, slowest reserve ${slowest.toFixed(0)}ms, total ${out.ms.total.toFixed(0)}ms`);
  });

  test('32 processes reclaiming the same stale lease leave exactly one winner', async (t) => {
    if (!requireNetns(t)) return;
    const stateDir = join(work, 'reclaim');
    const port = 21000;
    const dead = deadPid();
    const stale = { port, pid: dead, pidStart: 1, createdAt: Date.now() - 1000, createdBy: dead, netns: 'net:[0]' };
    const out = await swarm(
      { ephemeral: '30000 60999' },
      { children: 32, stateDir, leasePort: port, plant: { port, text: JSON.stringify(stale) }, child: { reserve: { source: { kind: 'port', port }, stateDir } } },
    );
    const winners = out.results.filter((r) => r.ok);
    assert.equal(winners.length, 1, `exactly one winner, got ${winners.length}: ${JSON.stringify(out.results.filter((r) => !r.ok).slice(0, 3))}`);
    assert.deepEqual(winners[0]!.ports, [port]);
    assert.equal(out.leaseCreatedBy, winners[0]!.pid, 'the lease file is the winner’s');
    for (const r of out.results.filter((x) => !x.ok)) {
      assert.equal(r.exitCode, 69, r.message);
      assert.match(r.message!, new RegExp(`port ${port} is not available`));
    }
    assert.deepEqual(out.whileHeld, [`${port}.lease`], 'no reclaim or temp files left behind');
    assert.deepEqual(out.afterRelease, []);
    t.diagnostic(`go→all answered ${out.ms.goToAllAnswered.toFixed(0)}ms, total ${out.ms.total.toFixed(0)}ms`);
  });

  test('32 processes on a garbage lease file: one winner', async (t) => {
    if (!requireNetns(t)) return;
    const stateDir = join(work, 'garbage');
    const port = 21001;
    const out = await swarm(
      {},
      { children: 32, stateDir, leasePort: port, plant: { port, text: '{"port": 21001, "pid": ' }, child: { reserve: { source: { kind: 'port', port }, stateDir } } },
    );
    assert.equal(out.results.filter((r) => r.ok).length, 1);
    assert.equal(out.leaseCreatedBy, out.results.find((r) => r.ok)!.pid);
    assert.deepEqual(out.afterRelease, []);
  });
});
