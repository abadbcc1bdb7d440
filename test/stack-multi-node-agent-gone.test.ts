/**
 * A multi-node stack whose agent is gone, without Slurm (issue 22 items 10 and 14): berth up
 * on a two-node "allocation" given by the Slurm variables (nodes 127.0.0.1 and 127.0.0.2, in
 * a network namespace of the test's own), with test/fixtures/fake-srun standing in for srun:
 * it runs both agents here and reports a task's abnormal end the way srun does. One agent
 * killed (kill -9) once the stack is ready, and the step ending by itself before the stack is
 * ready (its agents stopped cleanly, saying 0): each is a failed node, exit 70. The same on
 * the real test cluster: test/slurm-agent-gone.test.ts.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { EndpointRecord } from '../src/stack/record/endpoints.js';
import { BERTH, tempStateDir } from './helpers/cli.js';
import { requireNetns, runInNetns } from './helpers/netns.js';

const FAKE_SRUN = resolve('test/fixtures/fake-srun/fake-srun.cjs');

function setup(slowEngines: boolean): { dir: string; env: NodeJS.ProcessEnv } {
  const dir = mkdtempSync(join(tmpdir(), 'berth-agent-gone-'));
  writeFileSync(join(dir, 'srun'), `#!/bin/sh\nexec "${process.execPath}" "${FAKE_SRUN}" "$@"\n`, { mode: 0o755 });
  writeFileSync(
    join(dir, 'stack.yaml'),
    `services:
  engine:
    nodes: all
    command: [/bin/sh, -c, '${slowEngines ? 'sleep 120; ' : ''}exec /usr/bin/python3 -m http.server --bind "$0" "$1"', "{host}", "{port}"]
    ready_timeout: 1m
    stop_grace: 2s
  job:
    job: true
    depends_on: { engine: ready }
    command: [/bin/sh, -c, 'exec sleep 60']
`,
  );
  const env = { ...process.env, PATH: `${dir}:${process.env.PATH}`, SLURM_JOB_ID: '7', SLURM_JOB_NODELIST: '127.0.0.[1-2]', SLURMD_NODENAME: '127.0.0.1', SLURM_NODEID: '0', BERTH_STATE_DIR: tempStateDir(), NO_COLOR: '1' };
  return { dir, env };
}

const script = (dir: string, trigger: string) => `cd ${dir}
"${process.execPath}" "${BERTH}" up stack.yaml --run-dir "$PWD/run" 2> up.err &
pid=$!
${trigger}
wait $pid
echo "up exit $? after $(( $(date +%s%3N) - t0 )) ms" > result`;

test('no Slurm: kill -9 of the second node\'s agent once the stack is ready: the job stopped, exit 70, that node\'s engine recorded failed', async (t: TestContext) => {
  if (!requireNetns(t)) return;
  const { dir, env } = setup(false);
  const victim = `/usr/bin/python3 -c 'import json; print(json.load(open("run/nodes/127.0.0.2.json"))["pid"])'`;
  const r = await runInNetns({}, ['sh', '-c', script(dir, `for i in $(seq 600); do grep -q "stack ready" up.err && break; sleep 0.05; done\nv=$(${victim}); t0=$(date +%s%3N); kill -9 $v`)], { env, timeoutMs: 90_000 });
  const err = readFileSync(join(dir, 'up.err'), 'utf8');
  const all = `${r.stdout}${r.stderr}\n--- up.err\n${err}`;
  const m = /up exit (\d+) after (\d+) ms/.exec(readFileSync(join(dir, 'result'), 'utf8'));
  assert.ok(m, all);
  assert.equal(Number(m[1]), 70, all);
  assert.match(err, /berth: node 127\.0\.0\.2: its agent ended unasked \(srun: Killed\); stopping the stack/, all);
  assert.match(err, /failed: on node 127\.0\.0\.2: its agent ended unasked/, all);
  const doc = JSON.parse(readFileSync(join(dir, 'run', 'endpoints.json'), 'utf8')) as { replicas: EndpointRecord[] };
  assert.equal(doc.replicas.find((e) => e.node === '127.0.0.2')?.state, 'failed', JSON.stringify(doc.replicas));
  for (const e of doc.replicas) assert.notEqual(e.state, 'ready', JSON.stringify(e));
  const job = readFileSync(join(dir, 'run', 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { service: string; state: string }).filter((e) => e.service === 'job').map((e) => e.state);
  assert.deepEqual(job.slice(-2), ['stopping', 'exited'], `the job (sleep 60) was stopped: ${job.join(' ')}`);
  t.diagnostic(`berth up exited ${m[2]} ms after the kill`);
});

test('no Slurm: the agents\' step ends by itself before the stack is ready (agents stopped cleanly, 0): exit 70, not 0', async (t: TestContext) => {
  if (!requireNetns(t)) return;
  const { dir, env } = setup(true);
  const r = await runInNetns({}, ['sh', '-c', script(dir, 't0=$(date +%s%3N)')], { env: { ...env, FAKE_SRUN_END_EARLY: '1' }, timeoutMs: 90_000 });
  const err = readFileSync(join(dir, 'up.err'), 'utf8');
  const all = `${r.stdout}${r.stderr}\n--- up.err\n${err}`;
  const m = /up exit (\d+)/.exec(readFileSync(join(dir, 'result'), 'utf8'));
  assert.ok(m, all);
  assert.equal(Number(m[1]), 70, all);
  assert.match(err, /\(agent\)\/0 failed: on node 127\.0\.0\.\d: the agents' step \(srun\) ended with status 0/, all);
});
