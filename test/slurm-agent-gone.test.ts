/**
 * A multi-node stack whose agent is gone (issue 22 items 10 and 14), on the test Slurm
 * cluster (three emulated nodes n1..n3, scripts/slurm/start.sh): one node's agent killed
 * (kill -9) while its engine starts or once the stack is ready, and the agents' srun step
 * ending before the stack is ready. Each is a failed node: berth up stops the stack at once
 * and exits 70, and endpoints.json claims nothing of that node as ready. In CI these run;
 * elsewhere they skip loudly unless root.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { EndpointRecord } from '../src/stack/record/endpoints.js';
import { BERTH, tempStateDir } from './helpers/cli.js';
import { waitGone } from './helpers/procs.js';
import { describeJob, requireSlurm, sbatch, startCluster, stopCluster } from './helpers/slurm.js';

const B = `"${process.execPath}" "${BERTH}"`;
const STACK = resolve('test/fixtures/slurm/nodes-agent-gone-stack.yaml');

before(() => {
  startCluster(); // errors surface in requireSlurm, per test
});
after(() => stopCluster());

interface Ev {
  t: string;
  service: string;
  replica: number;
  node?: string;
  state: string;
  detail?: string;
}
const read = (f: string) => readFileSync(f, 'utf8');
const events = (f: string): Ev[] => read(f).trim().split('\n').map((l) => JSON.parse(l) as Ev);
const tag = () => [`nodes-${process.pid}`, Math.random().toString(36).slice(2)] as const;

/** berth up in the background; `trigger` (bash) waits for the moment, then kills; berth up's exit and how long after the kill. */
function script(trigger: string, victim: string): string {
  return `${B} up "${STACK}" --run-dir "$PWD/run" 2> up.err &
pid=$!
${trigger}
victim=${victim}
date +%s%3N > killed-at
kill -9 $victim
for i in $(seq 3000); do grep -qE "ended unasked|failed: on node" up.err && break; sleep 0.01; done
date +%s%3N > noticed-at
wait $pid
code=$?
echo "up exit $code after $(( $(date +%s%3N) - $(cat killed-at) )) ms"`;
}

const agentPid = `$(/usr/bin/python3 -c 'import json; print(json.load(open("run/nodes/n2.json"))["pid"])')`;

/** ms from the kill to berth up saying that the node's agent is gone (the script polls every 10 ms). */
const noticedMs = (dir: string): number => Number(read(`${dir}/noticed-at`).trim()) - Number(read(`${dir}/killed-at`).trim());

/**
 * One job of three nodes: berth up, killed at `trigger` as script() says. berth up's exit code
 * and ms after the kill, its stderr (and the job's description to quote in assertions), and
 * endpoints.json, where no replica may claim to be ready.
 */
async function killedJob(trigger: string, victim: string, tagValue: string, slow: boolean) {
  const r = await sbatch(script(trigger, victim), {
    args: ['-N3'],
    env: { BERTH_STATE_DIR: tempStateDir(), ...(slow ? { ENGINE_SLOW: '1' } : {}), BERTH_TEST_TAG: tagValue },
    timeoutMs: 60_000,
  });
  const err = read(`${r.dir}/up.err`);
  const all = `${describeJob(r)}\n--- up.err\n${err}`;
  const m = /up exit (\d+) after (\d+) ms/.exec(r.out);
  assert.ok(m, all);
  assert.equal(Number(m[1]), 70, all);
  const doc = JSON.parse(read(`${r.dir}/run/endpoints.json`)) as { replicas: EndpointRecord[] };
  for (const e of doc.replicas) assert.notEqual(e.state, 'ready', JSON.stringify(e));
  return { r, err, all, exitAfterMs: Number(m[2]), doc };
}

test('kill -9 of a node\'s agent while its engine starts: exit 70 at once (not after ready_timeout), naming the node; every node stopped, nothing left', async (t) => {
  if (!requireSlurm(t)) return;
  const [k, v] = tag();
  const { r, err, all, exitAfterMs } = await killedJob('for i in $(seq 600); do [ -f run/nodes/n2.json ] && [ -f run/nodes/n2/logs/engine-0.out ] && break; sleep 0.05; done; sleep 0.3', agentPid, `${k}-${v}`, true);
  // The engines' stop_grace is 5 s (the other nodes stop theirs in order): well under ready_timeout (1m).
  assert.ok(exitAfterMs < 20_000, `berth up took ${exitAfterMs} ms after the kill\n${all}`);
  assert.match(err, /berth: node n2: its agent ended unasked \(srun: Killed\); stopping the stack/, all);
  assert.match(err, /on node n2: its agent ended unasked \(srun: Killed\)/, all);
  for (const n of ['n1', 'n3']) assert.equal((JSON.parse(read(`${r.dir}/run/nodes/${n}.json`)) as { state: string }).state, 'stopped', n);
  assert.deepEqual((await waitGone(`BERTH_TEST_TAG=${k}-${v}`, 10_000)).left, [], 'processes left running');
  t.diagnostic(`berth up exited ${exitAfterMs} ms after the kill; noticed after ${noticedMs(r.dir)} ms; job ${r.seconds.toFixed(1)}s`);
});

test('kill -9 of a node\'s agent once the stack is ready: the job is stopped, exit 70; endpoints.json says the node\'s engine failed', async (t) => {
  if (!requireSlurm(t)) return;
  const [k, v] = tag();
  const { r, err, all, exitAfterMs, doc } = await killedJob('for i in $(seq 600); do grep -q "stack ready" up.err && break; sleep 0.05; done', agentPid, `${k}-${v}`, false);
  assert.match(err, /stack ready/, all);
  assert.match(err, /engine\/0@n2 failed .*: its agent on n2 ended unasked; berth up stopped the stack/, all);
  const n2 = doc.replicas.find((e) => e.service === 'engine' && e.node === 'n2');
  assert.equal(n2?.state, 'failed', JSON.stringify(doc.replicas));
  // The job (sleep 60) was stopped, not left to finish.
  const job = events(`${r.dir}/run/events.jsonl`).filter((e) => e.service === 'job').map((e) => e.state);
  assert.deepEqual(job.slice(-2), ['stopping', 'exited'], job.join(' '));
  for (const n of ['n1', 'n3']) assert.equal((JSON.parse(read(`${r.dir}/run/nodes/${n}.json`)) as { state: string }).state, 'stopped', n);
  assert.deepEqual((await waitGone(`BERTH_TEST_TAG=${k}-${v}`, 10_000)).left, [], 'processes left running');
  t.diagnostic(`berth up exited ${exitAfterMs} ms after the kill; noticed after ${noticedMs(r.dir)} ms; job ${r.seconds.toFixed(1)}s`);
});

test('the agents\' srun step ends before the stack is ready: exit 70, not 0', async (t) => {
  if (!requireSlurm(t)) return;
  const [k, v] = tag();
  const srun = `$(ps -o pid=,comm= --ppid $pid | awk '$2 == "srun" { print $1 }')`;
  const { r, err, all, exitAfterMs } = await killedJob('for i in $(seq 600); do [ -f run/nodes/n2.json ] && [ -f run/nodes/n3.json ] && break; sleep 0.05; done; sleep 0.3', srun, `${k}-${v}`, true);
  assert.match(err, /failed: on node n\d: /, all);
  assert.deepEqual((await waitGone(`BERTH_TEST_TAG=${k}-${v}`, 10_000)).left, [], 'processes left running');
  t.diagnostic(`berth up exited ${exitAfterMs} ms after srun was killed; job ${r.seconds.toFixed(1)}s`);
});
