/**
 * The SGLang multi-node recipe (examples/recipes/sglang/stack-nodes.yaml), rendered only (SGLang
 * needs GPUs): the recipe's stack runs with the stand-in `sglang.launch_server` module
 * (test/fixtures/fake-py), which checks --dist-init-addr/--nnodes/--node-rank, listens on node
 * 0's store and HTTP port, and answers /health only once every other node joined the store at
 * --dist-init-addr. The stack is a server (no job): the test waits for `berth up --json`'s
 * ready line, then stops berth with SIGTERM (exit 143). On one host (one node of one) and on
 * the 3 nodes of the test Slurm cluster.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { BERTH, tempStateDir } from './helpers/cli.js';
import { netnsArgv, requireNetns, runCollect } from './helpers/netns.js';
import { describeJob, requireSlurm, sbatch, startCluster, stopCluster } from './helpers/slurm.js';

const STACK = resolve('examples/recipes/sglang/stack-nodes.yaml');
const FAKE_PY = resolve('test/fixtures/fake-py');
/** Debian's python3 first (not a version-manager shim), bytecode kept out of the fixtures. */
const PY_ENV = { PYTHONPATH: FAKE_PY, PYTHONDONTWRITEBYTECODE: '1', PATH: `/usr/bin:${process.env.PATH}` };

/** bash: berth up --json in the background until its ready line, then SIGTERM; prints berth's status. */
const UNTIL_READY = (up: string) => `${up} --json > "$DIR/ready.json" & pid=$!
until [ -s "$DIR/ready.json" ] || ! kill -0 $pid 2>/dev/null; do sleep 0.1; done
kill -TERM $pid 2>/dev/null; wait $pid; echo "berth exit $?"`;

before(() => {
  startCluster(); // errors surface in requireSlurm, in the multi-node test only
});
after(() => stopCluster());

/** The stand-in's record of node k: argv, and BERTH_PORT_* / BERTH_NODE* as berth gave them. */
function node(record: string, k: number): { argv: string[]; env: Map<string, string> } {
  const argv = readFileSync(join(record, `server-node${k}.argv`), 'utf8').trimEnd().split('\n');
  const env = new Map(readFileSync(join(record, `server-node${k}.env`), 'utf8').trimEnd().split('\n').map((l) => l.split('=', 2) as [string, string]));
  return { argv, env };
}

/** Every node got the shared ports of node 0: --port P and --dist-init-addr 127.0.0.1:D, its own --node-rank. */
function checkNodes(record: string, dir: string, nnodes: number): void {
  assert.deepEqual(readdirSync(record).filter((f) => f.endsWith('.argv')).sort(), Array.from({ length: nnodes }, (_, k) => `server-node${k}.argv`));
  const ready = JSON.parse(readFileSync(join(dir, 'ready.json'), 'utf8')) as { shared?: Record<string, { host: string; ports: Record<string, number> }> };
  const first = node(record, 0).env;
  const http = first.get('BERTH_PORT_HTTP');
  const dist = first.get('BERTH_PORT_DIST');
  assert.ok(http && dist && http !== dist, JSON.stringify([...first]));
  for (let k = 0; k < nnodes; k++) {
    const n = node(record, k);
    assert.equal(n.env.get('BERTH_NODE_RANK'), String(k));
    assert.deepEqual(n.argv, ['--model-path', 'Qwen/Qwen2.5-72B-Instruct', '--tp', '16', '--host', '0.0.0.0', '--port', http,
      '--dist-init-addr', `127.0.0.1:${dist}`, '--nnodes', String(nnodes), '--node-rank', String(k)], `node ${k}`);
  }
  // Leased once, on node 0: the document berth printed when every node was ready says where.
  const shared = ready.shared?.server ?? (JSON.parse(readFileSync(join(dir, 'run', 'nodes', 'n1', 'endpoints.json'), 'utf8')) as typeof ready).shared?.server;
  assert.deepEqual(shared, { host: '127.0.0.1', ports: { http: Number(http), dist: Number(dist) } });
}

test('SGLang multi-node recipe on one host: --dist-init-addr {ports.dist.hostport}, --nnodes 1, --node-rank 0, ready through node 0\'s /health', { timeout: 120_000 }, async (t) => {
  if (!requireNetns(t)) return;
  const dir = mkdtempSync(join(tmpdir(), 'berth-recipe-sglang-nodes-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const record = join(dir, 'record');
  mkdirSync(record);
  // Outside Slurm, nodes: all is this host: one node of one.
  const r = await runCollect([...netnsArgv({}), 'bash', '-c', UNTIL_READY(`"${process.execPath}" "${BERTH}" up ${STACK} --run-dir "$DIR/run"`)], {
    env: { ...process.env, NO_COLOR: '1', DIR: dir, BERTH_STATE_DIR: join(dir, 'state'), FAKE_SGLANG_RECORD: record, ...PY_ENV },
    timeoutMs: 100_000,
  });
  assert.match(r.stdout, /^berth exit 143$/m, r.stdout + r.stderr);
  assert.match(r.stderr, /^stack ready after /m, r.stderr);
  checkNodes(record, dir, 1);
});

test('SGLang multi-node recipe on the 3-node test cluster: node ranks 0-2 join node 0\'s store at --dist-init-addr; all ready', { timeout: 180_000 }, async (t) => {
  if (!requireSlurm(t)) return;
  const record = mkdtempSync(join(tmpdir(), 'berth-recipe-sglang-nodes-'));
  t.after(() => rmSync(record, { recursive: true, force: true }));
  const r = await sbatch(`DIR="$PWD"\n${UNTIL_READY(`"${process.execPath}" "${BERTH}" up ${STACK} --run-dir "$PWD/run"`)}`, {
    args: ['-N3'],
    env: { BERTH_STATE_DIR: tempStateDir(), FAKE_SGLANG_RECORD: record, ...PY_ENV },
    timeoutMs: 150_000,
  });
  assert.equal(r.code, 0, describeJob(r));
  assert.match(r.out, /^berth exit 143$/m, describeJob(r));
  assert.ok(existsSync(join(r.dir, 'ready.json')), describeJob(r));
  checkNodes(record, r.dir, 3);
});
