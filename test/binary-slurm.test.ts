/**
 * The single executable under the test Slurm cluster (3 emulated nodes on this host, see
 * helpers/slurm.ts): `berth up` with `nodes: all` started from the binary starts its agents
 * (srun … berth up --agent) with the binary too, not with node. Each engine prints the
 * executable of its parent, the agent that launched it.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { binaryCopy, type BinaryCopy } from './helpers/binary.js';
import { tempStateDir } from './helpers/cli.js';
import { describeJob, requireSlurm, sbatch, SLURM_DIR, startCluster, stopCluster } from './helpers/slurm.js';

/** Whether the cluster's slurmctld runs now: one this file did not start, it leaves running. */
function clusterRunning(): boolean {
  try {
    const pid = Number(readFileSync(join(SLURM_DIR, 'run/slurmctld.pid'), 'utf8'));
    return pid > 0 && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'slurmctld';
  } catch {
    return false;
  }
}

let copy: BinaryCopy;
let wasRunning = false;
before(() => {
  copy = binaryCopy();
  wasRunning = clusterRunning();
  startCluster(); // errors surface in requireSlurm
});
after(() => {
  if (!wasRunning) stopCluster();
  copy?.remove();
});

const DEMO = resolve('examples/demo');
const LAYOUT = resolve('test/fixtures/slurm/layout.yaml');

test('three emulated nodes: berth up from the binary runs its agents from the binary', async (t) => {
  if (!requireSlurm(t)) return;
  const stack = join(copy.scratch, 'nodes-stack.yaml');
  writeFileSync(
    stack,
    `layout: ${LAYOUT}
services:
  engine:
    nodes: all
    band: engines
    cwd: ${DEMO}
    command: [sh, -c, 'echo "agent $(readlink /proc/$PPID/exe)" >&2; exec node engine.js --host {host} --port {port} --replica "$SLURM_NODEID"']
    env: { LOAD_MS: "100" }
    ready: http://127.0.0.1:{port}/health
    ready_timeout: 1m
  proxy:
    band: proxy
    cwd: ${DEMO}
    command: [node, proxy.js, --port, "{port}", --backends, "{engine.urls}"]
    depends_on: { engine: ready }
    ready: http://127.0.0.1:{port}/health
  client:
    cwd: ${DEMO}
    command: [node, client.js, --url, "{proxy.url}", --requests, "30", --concurrency, "3"]
    depends_on: { proxy: ready }
    job: true
`,
  );
  const r = await sbatch(`"${copy.bin}" up "${stack}" --run-dir "$PWD/run"`, { args: ['-N3'], env: { BERTH_STATE_DIR: tempStateDir() } });
  assert.equal(r.code, 0, describeJob(r));
  for (const n of [0, 1, 2]) assert.match(r.out, new RegExp(`engine/${n} +10 requests`), describeJob(r));
  assert.match(r.err, /berth: starting engine on n\[1-3\] \(one agent per node, srun step/);
  for (const node of ['n1', 'n2', 'n3']) {
    const f = JSON.parse(readFileSync(`${r.dir}/run/nodes/${node}.json`, 'utf8')) as { state: string };
    assert.equal(f.state, 'stopped', `${node}: ${JSON.stringify(f)}`);
    assert.equal(readFileSync(`${r.dir}/run/nodes/${node}/logs/engine-0.err`, 'utf8').split('\n')[0], `agent ${copy.bin}`, `${node}'s agent`);
  }
});
