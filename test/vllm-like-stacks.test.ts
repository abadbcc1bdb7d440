/**
 * 8 stacks of 2 vLLM-like engines (test/fixtures/services/vllm-like.py: vLLM's
 * bind-without-SO_REUSEADDR scan upward from VLLM_PORT, probe then real bind later),
 * started at once by 8 `berth up` on one host (a network namespace of the test's own).
 *
 * With berth's named ports (`http: 1, dist: { block: 16 }`, VLLM_PORT={ports.dist}) no
 * engine may fail and every engine's internal ports lie in its own block, the blocks
 * disjoint across stacks. The control runs the same stacks with today's single port and
 * VLLM_PORT = port + 1 and must collide: proof that the test can fail.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Scheme, StacksResult } from './fixtures/services/vllm-stacks.js';
import { BERTH } from './helpers/cli.js';
import { requireNetns, runInNetns, tsNode } from './helpers/netns.js';

const DRIVER = 'test/fixtures/services/vllm-stacks.ts';

async function runStacks(scheme: Scheme): Promise<StacksResult> {
  const dir = mkdtempSync(join(tmpdir(), `berth-vllm-${scheme}-`));
  try {
    const r = await runInNetns({}, tsNode(DRIVER, '--scheme', scheme, '--dir', dir, '--berth', BERTH, '--stacks', '8', '--engines', '2', '--internal', '4', '--block', '16'), {
      timeoutMs: 240_000,
    });
    assert.equal(r.code, 0, `driver failed: ${r.stderr}`);
    return JSON.parse(r.stdout) as StacksResult;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function summary(r: StacksResult): string {
  const lines = r.engines.map((e) => `stack-${e.stack}/engine-${e.replica}: api ${e.api ?? '-'} internal ${e.internal.join(',') || '-'} block ${e.block ? `${e.block.first}-${e.block.last}` : '-'} ${e.addrInUse ? e.error : e.ready ? 'ready' : 'not ready'}`);
  const codes = r.stacks.map((s) => `stack-${s.stack}: exit ${s.code}`);
  const bad = r.stacks.find((s) => s.code !== 0);
  return [...codes, ...lines, ...(bad ? [`stack-${bad.stack} stderr:`, bad.stderrTail] : [])].join('\n');
}

test('control: single port, VLLM_PORT = port + 1 — 8 stacks of 2 engines collide', { timeout: 300_000 }, async (t) => {
  if (!requireNetns(t)) return;
  const r = await runStacks('port-plus-1');
  t.diagnostic(`port+1: ${r.failed} engines failed with EADDRINUSE, ${r.overlaps.length} ports chosen by two engines`);
  assert.ok(r.failed + r.overlaps.length > 0, `expected at least one EADDRINUSE or overlap:\n${summary(r)}`);
  assert.ok(r.stacks.some((s) => s.code !== 0), 'at least one stack fails');
});

test('berth: ports { http: 1, dist: { block: 16 } } — no EADDRINUSE, internal ports inside own block, blocks disjoint', { timeout: 300_000 }, async (t) => {
  if (!requireNetns(t)) return;
  const r = await runStacks('blocks');
  const why = summary(r);
  assert.equal(r.failed, 0, `no engine may fail with EADDRINUSE:\n${why}`);
  assert.deepEqual(r.overlaps, [], why);
  assert.deepEqual(r.stacks.map((s) => s.code), Array(8).fill(0), why);
  assert.equal(r.engines.length, 16);
  for (const e of r.engines) {
    assert.ok(e.ready, `stack-${e.stack}/engine-${e.replica} ready\n${why}`);
    assert.ok(e.block, `endpoints.json gives stack-${e.stack}/engine-${e.replica} its dist block\n${why}`);
    assert.equal(e.block.last - e.block.first + 1, 16);
    assert.equal(e.internal.length, 4);
    for (const p of e.internal) assert.ok(p >= e.block.first && p <= e.block.last, `stack-${e.stack}/engine-${e.replica}: internal port ${p} outside its block ${e.block.first}-${e.block.last}`);
    assert.ok(e.api !== undefined && (e.api < e.block.first || e.api > e.block.last), 'the http port is not inside the block');
    // Everything the engine listens on is in its set: the audit has nothing to report.
    assert.equal(e.unexpected, undefined, `stack-${e.stack}/engine-${e.replica}: unexpected listeners ${e.unexpected?.join(',')}`);
  }
  const blocks = r.engines.map((e) => e.block!).sort((a, b) => a.first - b.first);
  for (let i = 1; i < blocks.length; i++) assert.ok(blocks[i]!.first > blocks[i - 1]!.last, `blocks overlap: ${JSON.stringify(blocks[i - 1])} and ${JSON.stringify(blocks[i])}`);
  const apis = new Set(r.engines.map((e) => e.api));
  assert.equal(apis.size, 16, 'every engine has its own http port');
  for (const e of r.engines) for (const b of blocks) assert.ok(e.api! < b.first || e.api! > b.last, `http port ${e.api} inside block ${b.first}-${b.last}`);
});
