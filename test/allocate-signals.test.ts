/**
 * "All or none" under signals, and contention that is not exhaustion (issue 9 §3), inside
 * network namespaces made for the test:
 * - `berth port --count 4 --owner PID` killed with SIGKILL or SIGTERM while it allocates
 *   never leaves a partial set leased to the owner; SIGTERM rolls back and exits 143.
 * - concurrent `berth up` of stacks that need 2 of 4 ports: as many stacks start as there
 *   is room for, and the others fail with 69 naming their competitors.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { requireNetns, runInNetns, tsNode } from './helpers/netns.js';

const berth = join(import.meta.dirname, '..', 'dist', 'berth.cjs');
const work = mkdtempSync(join(tmpdir(), 'berth-signals-'));
after(() => rmSync(work, { recursive: true, force: true }));

interface Trial {
  code: number | null;
  signal: string | null;
  printed: number;
  live: number;
  files: number;
  stderr: string;
}

async function killTrials(signal: string, n: number): Promise<Trial[]> {
  const script = join(import.meta.dirname, 'fixtures', 'scripts', 'allocate-kill.ts');
  const r = await runInNetns({ ephemeral: '30000 60999' }, tsNode(script, berth, join(work, `state-${signal}`), signal, String(n)), { timeoutMs: 240_000 });
  assert.equal(r.code, 0, `driver failed: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { trials: Trial[] }).trials;
}

describe('all or none under signals', () => {
  test('SIGKILL mid-allocation never leaves a partial set leased to the owner', async (t) => {
    if (!requireNetns(t)) return;
    const trials = await killTrials('SIGKILL', 20);
    const partial = trials.filter((x) => (x.live !== 0 && x.live !== 4) || x.files !== x.live);
    assert.deepEqual(partial, [], 'a set is whole or not leased, and a killed allocator leaves no port name behind');
    t.diagnostic(`${trials.length} trials: ${trials.filter((x) => x.live === 0).length} left nothing, ${trials.filter((x) => x.live === 4).length} complete`);
  });

  test('SIGTERM mid-allocation rolls back and exits 143, or completes and prints all ports', async (t) => {
    if (!requireNetns(t)) return;
    const trials = await killTrials('SIGTERM', 20);
    for (const x of trials) {
      if (x.code === 0) {
        assert.equal(x.printed, 4, 'completed: all four printed');
        assert.equal(x.live, 4);
      } else if (x.code === null) {
        // Killed by the signal itself: Node's default disposition is back only while it starts
        // up (nothing leased yet) or after it has printed every port and is tearing down (the
        // set is whole). Either way the set is all or none.
        assert.equal(x.signal, 'SIGTERM');
        assert.ok((x.printed === 0 && x.files === 0) || (x.printed === 4 && x.live === 4), JSON.stringify(x));
      } else {
        assert.equal(x.code, 143, `exit ${x.code ?? x.signal}: ${JSON.stringify(x)}`);
        assert.match(x.stderr, /interrupted by SIGTERM; nothing was leased/);
        assert.equal(x.printed, 0);
        assert.equal(x.files, 0, 'rolled back: no port name left at all');
      }
    }
    t.diagnostic(`${trials.length} trials: ${trials.filter((x) => x.code === 143).length} rolled back, ${trials.filter((x) => x.code === 0).length} completed`);
  });
});

describe('contention is not exhaustion', () => {
  const stack = join(work, 'stack.yaml');
  writeFileSync(
    stack,
    [
      'services:',
      '  srv:',
      '    replicas: 2',
      '    range: 23500-23503',
      '    command: [/usr/bin/python3, -m, http.server, "{port}", --bind, 127.0.0.1]',
      '    ready: tcp',
      '    stop_grace: 2s',
      '  client:',
      '    command: [sleep, "6"]',
      '    depends_on: { srv: ready }',
      '    job: true',
      '',
    ].join('\n'),
  );

  /** N concurrent `berth up` in one new namespace; their exit codes and stderr. */
  async function concurrentUps(n: number): Promise<{ code: number; stderr: string }[]> {
    const driver = [
      'const { spawn } = require("node:child_process");',
      `const n = ${n};`,
      'const runs = [];',
      'for (let i = 0; i < n; i++) runs.push(new Promise((resolve) => {',
      `  const c = spawn(process.execPath, [${JSON.stringify(berth)}, "up", ${JSON.stringify(stack)}, "--run-dir", ${JSON.stringify(join(work, 'runs'))} + "/" + n + "-" + i], { env: { ...process.env, BERTH_STATE_DIR: ${JSON.stringify(join(work, 'state-up'))} + n }, stdio: ["ignore", "ignore", "pipe"] });`,
      '  let err = ""; c.stderr.setEncoding("utf8").on("data", (d) => (err += d));',
      '  c.on("close", (code) => resolve({ code, stderr: err }));',
      '}));',
      'Promise.all(runs).then((r) => console.log(JSON.stringify(r)));',
    ].join('\n');
    const r = await runInNetns({ ephemeral: '30000 60999' }, [process.execPath, '-e', driver], { timeoutMs: 120_000 });
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as { code: number; stderr: string }[];
  }

  for (const n of [4, 8]) {
    test(`${n} concurrent stacks needing 2 of 4 ports: two start, the rest fail with 69 naming their competitors`, async (t) => {
      if (!requireNetns(t)) return;
      const runs = await concurrentUps(n);
      const ok = runs.filter((r) => r.code === 0);
      assert.ok(ok.length >= 2, `only ${ok.length} of ${n} started although there is room for 2:\n${runs.map((r) => r.stderr).join('\n---\n')}`);
      for (const r of runs.filter((x) => x.code !== 0)) {
        assert.equal(r.code, 69, r.stderr);
        assert.doesNotMatch(r.stderr, /process not visible/);
        // A running stack's listener is shared by python and the `berth up` that lent it (the lease's holder), so either may be named.
        assert.match(r.stderr, /leased to pid \d+ .*berth|held by berth pid \d+|LISTEN by pid \d+ \((?:\/usr\/bin\/python3|\S+ \S*berth\.cjs up )/);
      }
      t.diagnostic(`${ok.length} of ${n} stacks started`);
    });
  }
});
