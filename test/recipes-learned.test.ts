/**
 * The recipes whose servers choose their own ports, run for real with Debian's packages in a
 * fresh network namespace: a Dask cluster (python3-distributed: a scheduler on port 0 and
 * workers on random ports, learned from their lines and listeners, every worker reached by the
 * client job), and a torch.distributed group whose rank 0 creates its TCPStore on port 0
 * (python3-torch), learned and handed to the other ranks.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { berth } from './helpers/cli.js';
import { requireNetns } from './helpers/netns.js';
import { NEED, requireNeeds, type Need } from './helpers/require.js';

const RECIPES = resolve('examples/recipes');

async function up(t: TestContext, stack: string, needs: Need[]) {
  if (!requireNeeds(t, ...needs) || !requireNetns(t)) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'berth-recipe-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const run = join(dir, 'run');
  const r = await berth(['up', stack, '--run-dir', run], { netns: {}, env: { BERTH_STATE_DIR: join(dir, 'state') }, timeoutMs: 240_000 });
  const doc = JSON.parse(readFileSync(join(run, 'endpoints.json'), 'utf8'));
  return { r, doc, log: (f: string) => readFileSync(join(run, 'logs', f), 'utf8') };
}

describe('recipes: servers that choose their ports', { concurrency: 1 }, () => {
  test('dask: the scheduler on port 0 and two workers on random ports are learned; the client reaches every worker', async (t) => {
    const u = await up(t, join(RECIPES, 'dask/stack.yaml'), [NEED.daskScheduler, NEED.distributed]);
    if (!u) return;
    assert.equal(u.r.code, 0, u.r.stderr);
    const sched = u.doc.replicas.find((x: any) => x.service === 'scheduler');
    const workers = u.doc.replicas.filter((x: any) => x.service === 'worker');
    assert.deepEqual(sched.learned, ['sched', 'dashboard']);
    assert.equal(sched.url, `tcp://127.0.0.1:${sched.port}`);
    // Each process's own line names the port berth learned.
    assert.match(u.log('scheduler-0.err'), new RegExp(`Scheduler at: +tcp://127\\.0\\.0\\.1:${sched.port}\\b`));
    assert.equal(workers.length, 2);
    for (const w of workers) {
      assert.deepEqual(w.learned, ['worker', 'nanny', 'dashboard']);
      assert.match(u.log(`worker-${w.replica}.err`), new RegExp(`Start worker at: +tcp://127\\.0\\.0\\.1:${w.port}\\b`));
      assert.match(u.log(`worker-${w.replica}.err`), new RegExp(`Start Nanny at: 'tcp://127\\.0\\.0\\.1:${w.ports.nanny}'`));
      assert.match(u.r.stdout + u.r.stderr, new RegExp(`worker tcp://127\\.0\\.0\\.1:${w.port}: 42`));
    }
    assert.match(u.r.stdout + u.r.stderr, new RegExp(`dask: 2 workers reached through tcp://127\\.0\\.0\\.1:${sched.port}`));
  });

  test('torch: rank 0 creates its TCPStore on port 0; the port is learned and the other ranks join it', async (t) => {
    const u = await up(t, join(RECIPES, 'torch-distributed/stack-store0.yaml'), [NEED.torch]);
    if (!u) return;
    assert.equal(u.r.code, 0, u.r.stderr);
    const r0 = u.doc.replicas.find((x: any) => x.service === 'rank0');
    assert.deepEqual(r0.learned, ['store']);
    assert.match(u.log('rank0-0.out'), new RegExp(`TCPStore on port ${r0.port}\\b`));
    assert.match(u.log('rank0-0.out'), /rank 0: sum 6 \(want 6\)/);
    for (const i of [0, 1]) assert.match(u.log(`ranks-${i}.out`), new RegExp(`rank ${i + 1}: sum 6 \\(want 6\\)`));
  });
});
