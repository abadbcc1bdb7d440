/**
 * The SGLang multi-node recipe (examples/recipes/sglang/stack-nodes.yaml), rendered only (SGLang
 * needs GPUs): the recipe's stack runs with the stand-in `sglang.launch_server` module
 * (test/fixtures/fake-py), which checks --dist-init-addr/--nnodes/--node-rank, listens on node
 * 0's store and HTTP port, binds on node 0 the ports SGLang derives from the --dist-init-addr
 * port with --enable-dp-attention (exiting 3, naming the port, if one lies outside the leased
 * block), and answers /health and /generate only once every other node joined the store. The
 * recipe's `bench` job posts to /generate at {server.port.http.hostport}, and the stack ends
 * with its status, 0. On one host (one node of one) and on the 3 nodes of the test Slurm cluster.
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
/** The recipe's shared block for --dist-init-addr (P..P+13, see its comment). */
const BLOCK = 14;

/** bash: berth up to its end; prints berth's status. */
const UP = (up: string) => `${up}; echo "berth exit $?"`;

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

/**
 * Every node got node 0's shared ports: --port P and --dist-init-addr 127.0.0.1:D with D the
 * first port of one block of 14, its own --node-rank; node 0 bound D+1..D+6 (and D+13 with
 * more than one node) inside that block; bench's request reached the server once all nodes had joined.
 */
function checkNodes(record: string, runDir: string, out: string, nnodes: number): void {
  assert.deepEqual(readdirSync(record).filter((f) => f.endsWith('.argv')).sort(), Array.from({ length: nnodes }, (_, k) => `server-node${k}.argv`));
  const first = node(record, 0).env;
  const http = first.get('BERTH_PORT_HTTP');
  const dist = Number(first.get('BERTH_PORT_DIST_FIRST'));
  assert.ok(http && dist && Number(http) !== dist, JSON.stringify([...first]));
  const block = { first: dist, last: dist + BLOCK - 1, count: BLOCK };
  for (let k = 0; k < nnodes; k++) {
    const n = node(record, k);
    assert.equal(n.env.get('BERTH_NODE_RANK'), String(k));
    assert.deepEqual([n.env.get('BERTH_PORT_DIST_FIRST'), n.env.get('BERTH_PORT_DIST_LAST'), n.env.get('BERTH_PORT_DIST_COUNT')],
      [String(block.first), String(block.last), String(BLOCK)], `node ${k}`);
    assert.deepEqual(n.argv, ['--model-path', 'deepseek-ai/DeepSeek-V3', '--trust-remote-code', '--tp', '16', '--dp', '16', '--enable-dp-attention',
      '--host', '0.0.0.0', '--port', http, '--dist-init-addr', `127.0.0.1:${dist}`, '--nnodes', String(nnodes), '--node-rank', String(k)], `node ${k}`);
  }
  const derived = readFileSync(join(record, 'server-node0.derived'), 'utf8').trimEnd().split('\n').map(Number);
  assert.deepEqual(derived, [1, 2, 3, 4, 5, 6, ...(nnodes > 1 ? [13] : [])].map((d) => dist + d));
  // Leased once, on node 0, as one block: endpoints.json of the first node says where.
  const doc = ['endpoints.json', join('nodes', 'n1', 'endpoints.json')].map((f) => join(runDir, f)).find((f) => existsSync(f));
  assert.ok(doc, `no endpoints.json in ${runDir}`);
  const shared = (JSON.parse(readFileSync(doc, 'utf8')) as { shared?: Record<string, unknown> }).shared?.server;
  assert.deepEqual(shared, { host: '127.0.0.1', ports: { http: Number(http), dist: block } });
  // bench: {server.port.http.hostport} reached node 0's API once every node had joined.
  assert.match(out, new RegExp(`^\\{"text": " \\(stand-in\\) ${nnodes} nodes", "meta_info": \\{"prompt": "The capital of France is"\\}\\}$`, 'm'), out);
}

test('SGLang multi-node recipe on one host: --dist-init-addr at the first port of a shared block covering DP attention\'s ports; bench ends the stack with 0', { timeout: 120_000 }, async (t) => {
  if (!requireNetns(t)) return;
  const dir = mkdtempSync(join(tmpdir(), 'berth-recipe-sglang-nodes-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const record = join(dir, 'record');
  mkdirSync(record);
  // Outside Slurm, nodes: all is this host: one node of one.
  const r = await runCollect([...netnsArgv({}), 'bash', '-c', UP(`"${process.execPath}" "${BERTH}" up "${STACK}" --run-dir "$DIR/run"`)], {
    env: { ...process.env, NO_COLOR: '1', DIR: dir, BERTH_STATE_DIR: join(dir, 'state'), FAKE_SGLANG_RECORD: record, ...PY_ENV },
    timeoutMs: 100_000,
  });
  assert.match(r.stdout, /^berth exit 0$/m, r.stdout + r.stderr);
  assert.match(r.stderr, /^berth: job bench exited with status 0; stack stopped/m, r.stderr);
  assert.doesNotMatch(r.stderr, /outside its ports/, r.stderr);
  checkNodes(record, join(dir, 'run'), r.stdout, 1);
});

test('SGLang multi-node recipe on the 3-node test cluster: node ranks 0-2 join node 0\'s store, node 0 binds D+1..D+6 and D+13 inside the block; bench ends the stack with 0', { timeout: 180_000 }, async (t) => {
  if (!requireSlurm(t)) return;
  const record = mkdtempSync(join(tmpdir(), 'berth-recipe-sglang-nodes-'));
  t.after(() => rmSync(record, { recursive: true, force: true }));
  const r = await sbatch(UP(`"${process.execPath}" "${BERTH}" up "${STACK}" --run-dir "$PWD/run"`), {
    args: ['-N3'],
    env: { BERTH_STATE_DIR: tempStateDir(), FAKE_SGLANG_RECORD: record, ...PY_ENV },
    timeoutMs: 150_000,
  });
  assert.equal(r.code, 0, describeJob(r));
  assert.match(r.out, /^berth exit 0$/m, describeJob(r));
  assert.match(r.err, /^berth: job bench exited with status 0; stack stopped/m, describeJob(r));
  assert.doesNotMatch(r.err, /outside its ports/, describeJob(r));
  checkNodes(record, join(r.dir, 'run'), r.out, 3);
});
