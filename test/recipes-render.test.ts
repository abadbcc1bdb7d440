/**
 * Recipes for programs that cannot be installed here (vLLM needs GPUs): the recipe's own stack
 * runs with a stand-in first on PATH that records the argv and environment berth gives it and
 * takes its ports as the real program does; the test checks them against what the program's
 * documentation requires.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test, type TestContext } from 'node:test';
import { berth } from './helpers/cli.js';
import { requireNetns } from './helpers/netns.js';

const FAKE_BIN = resolve('test/fixtures/fake-bin');
const FAKE_PY = resolve('test/fixtures/fake-py');

/** `berth up` of a recipe in a fresh netns, with a record folder for the stand-in; undefined when skipped outside CI. */
async function upRecipe(t: TestContext, name: string, env: (record: string) => NodeJS.ProcessEnv): Promise<{ run: string; record: string } | undefined> {
  if (!requireNetns(t)) return undefined;
  const dir = mkdtempSync(join(tmpdir(), `berth-recipe-${name}-`));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const record = join(dir, 'record');
  mkdirSync(record);
  const run = join(dir, 'run');
  const r = await berth(['up', resolve(`examples/recipes/${name}/stack.yaml`), '--run-dir', run], {
    netns: {},
    env: { BERTH_STATE_DIR: join(dir, 'state'), ...env(record) },
    timeoutMs: 240_000,
  });
  assert.equal(r.code, 0, r.stderr);
  return { run, record };
}

test('vLLM recipe: serve MODEL --host --port {ports.http}, VLLM_PORT = first port of the block, internal ports inside it', { timeout: 240_000 }, async (t) => {
  const u = await upRecipe(t, 'vllm', (record) => ({ FAKE_VLLM_RECORD: record, PATH: `${FAKE_BIN}:${process.env.PATH}` }));
  if (!u) return;
  const { run, record } = u;
  const doc = JSON.parse(readFileSync(join(run, 'endpoints.json'), 'utf8')) as { replicas: { service: string; replica: number; ports?: Record<string, number | { first: number; last: number; count: number }> }[] };
  const engines = doc.replicas.filter((x) => x.service === 'engine');
  assert.equal(engines.length, 2);
  const blocks: [number, number][] = [];
  for (const e of engines) {
    const http = e.ports!.http as number;
    const dist = e.ports!.dist as { first: number; last: number; count: number };
    assert.equal(dist.count, 32);
    assert.equal(dist.last - dist.first, 31);
    const argv = readFileSync(join(record, `engine-${e.replica}.argv`), 'utf8').trimEnd().split('\n');
    assert.deepEqual(argv, ['serve', 'Qwen/Qwen2.5-0.5B-Instruct', '--host', '127.0.0.1', '--port', String(http)]);
    const env = readFileSync(join(record, `engine-${e.replica}.env`), 'utf8');
    assert.match(env, new RegExp(`^VLLM_PORT=${dist.first}$`, 'm'));
    assert.match(env, new RegExp(`^BERTH_PORT_DIST_LAST=${dist.last}$`, 'm'));
    const out = readFileSync(join(run, 'logs', `engine-${e.replica}.out`), 'utf8');
    const internal = /vllm-like: internal=([\d,]+)/.exec(out)?.[1]?.split(',').map(Number) ?? [];
    assert.equal(internal.length, 4, out);
    for (const p of internal) assert.ok(p >= dist.first && p <= dist.last, `engine ${e.replica}: internal port ${p} outside its block ${dist.first}-${dist.last}`);
    blocks.push([dist.first, dist.last]);
  }
  const [a, b] = blocks as [[number, number], [number, number]];
  assert.ok(a[1] < b[0] || b[1] < a[0], `blocks overlap: ${a} and ${b}`);
});

test('SGLang recipe: --model-path --host --port {ports.http} --nccl-port {ports.nccl}, ports distinct, nothing outside the set', { timeout: 240_000 }, async (t) => {
  // Debian's python3, not a version-manager shim.
  const u = await upRecipe(t, 'sglang', (record) => ({ FAKE_SGLANG_RECORD: record, PYTHONPATH: FAKE_PY, PYTHONDONTWRITEBYTECODE: '1', PATH: `/usr/bin:${process.env.PATH}` }));
  if (!u) return;
  const { run, record } = u;
  const doc = JSON.parse(readFileSync(join(run, 'endpoints.json'), 'utf8')) as { replicas: { service: string; replica: number; ports?: Record<string, number>; unexpectedListeners?: unknown[] }[] };
  const servers = doc.replicas.filter((x) => x.service === 'server');
  assert.equal(servers.length, 2);
  const all = new Set<number>();
  for (const s of servers) {
    const { http, nccl } = s.ports as { http: number; nccl: number };
    const argv = readFileSync(join(record, `server-${s.replica}.argv`), 'utf8').trimEnd().split('\n');
    assert.deepEqual(argv, ['--model-path', 'Qwen/Qwen2.5-0.5B-Instruct', '--host', '127.0.0.1', '--port', String(http), '--nccl-port', String(nccl)]);
    assert.match(readFileSync(join(record, `server-${s.replica}.env`), 'utf8'), new RegExp(`^BERTH_PORT_NCCL=${nccl}$`, 'm'));
    assert.equal(s.unexpectedListeners, undefined, JSON.stringify(s));
    all.add(http).add(nccl);
  }
  assert.equal(all.size, 4);
});
