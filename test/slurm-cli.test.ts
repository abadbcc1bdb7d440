import { test } from 'node:test';
import assert from 'node:assert/strict';
import { berth, tempStateDir } from './helpers/cli.js';
import { readFileSync } from 'node:fs';
import { requireNetns, runInNetns } from './helpers/netns.js';

// The CLI as a Slurm job step sees it, without a cluster: Slurm's variables are set by hand
// (test/slurm-cluster.test.ts runs the same commands under a real Slurm).
const LAYOUT = 'test/fixtures/slurm/layout.yaml';
const JOB = { SLURM_JOB_ID: '41', SLURM_STEP_ID: '0', SLURM_LOCALID: '1', SLURMD_NODENAME: 'n1', SLURM_JOB_NODELIST: 'n[1-2]', SLURM_STEP_GPUS: '2,3', CUDA_VISIBLE_DEVICES: '0,1', SLURM_STEP_RESV_PORTS: '12001-12003' };

test('port --instance gpu|auto and --source resv lease in the job\'s window; release --job ends them', async (t) => {
  if (!requireNetns(t)) return;
  const sh = `set -e
B="${process.execPath} dist/berth.js"
$B port --layout "${LAYOUT}" --band engines --instance gpu --ttl 1h
$B port --layout "${LAYOUT}" --band engines --instance auto --ttl 1h
$B port --source resv --count 3 --ttl 1h
$B leases --json > "$BERTH_STATE_DIR/leases.json"
$B release --job 41
$B leases`;
  const dir = tempStateDir();
  const out = await runInNetns({}, ['sh', '-c', sh], { env: { ...process.env, ...JOB, BERTH_STATE_DIR: dir } });
  assert.equal(out.code, 0, out.stderr);
  const lines = out.stdout.trim().split('\n');
  assert.equal(lines[0], '21200', 'GPU 2 (renumbered to CUDA 0) takes window 2');
  assert.equal(lines[1], '21100', 'SLURM_LOCALID 1 takes window 1');
  assert.deepEqual(lines.slice(2, 5), ['12001', '12002', '12003']);
  assert.match(lines[5]!, /^released 12001 12002 12003 21100 21200$/);
  assert.match(lines.slice(6).join('\n'), /no leases/i);
  const leases = JSON.parse(readFileSync(`${dir}/leases.json`, 'utf8')) as { slurmJobId?: string; slurmStepId?: string }[] | { leases: { slurmJobId?: string; slurmStepId?: string }[] };
  const list = Array.isArray(leases) ? leases : leases.leases;
  assert.equal(list.length, 5);
  for (const l of list) assert.deepEqual([l.slurmJobId, l.slurmStepId], ['41', '0']);
});

test('port: bad Slurm variables exit 65 naming them; missing ones are usage errors', async () => {
  const dir = tempStateDir();
  const dup = await berth(['port', '--layout', LAYOUT, '--band', 'engines', '--instance', 'gpu'], { env: { ...JOB, SLURM_STEP_GPUS: '2,2', BERTH_STATE_DIR: dir } });
  assert.equal(dup.code, 65, dup.stderr);
  assert.match(dup.stderr, /SLURM_STEP_GPUS="2,2": lists 2 twice/);
  const none = await berth(['port', '--source', 'resv'], { env: { SLURM_JOB_ID: '41', BERTH_STATE_DIR: dir } });
  assert.equal(none.code, 64);
  assert.match(none.stderr, /--source resv: SLURM_STEP_RESV_PORTS is not set in job 41/);
  const badJob = await berth(['release', '--job', '41.0'], { env: { BERTH_STATE_DIR: dir } });
  assert.equal(badJob.code, 64);
  assert.match(badJob.stderr, /--job "41.0": expected a Slurm job id/);
});

test('doctor inside a job reports the job, its GPUs and windows (text and --json)', async () => {
  const env = { ...JOB, BERTH_STATE_DIR: tempStateDir() };
  const text = await berth(['doctor', '--layout', LAYOUT], { env });
  assert.match(text.stdout, /Slurm job 41 step 0 on node n1; nodes n\[1-2\] \(2\)/);
  assert.match(text.stdout, /GPUs \(SLURM_STEP_GPUS\): 2 \(CUDA_VISIBLE_DEVICES 0\), 3 \(CUDA_VISIBLE_DEVICES 1\)/);
  assert.match(text.stdout, /engines +gpu 2: 21200-21299 +gpu 3: 21300-21399 +auto: 21100-21199/);
  assert.match(text.stdout, /proxy +gpu 2: 22020-22029/);
  const json = await berth(['doctor', '--layout', LAYOUT, '--json'], { env });
  const report = JSON.parse(json.stdout) as { slurm: { jobId: string; gpus: unknown[]; instanceGpu: { instance: number } } };
  assert.equal(report.slurm.jobId, '41');
  assert.deepEqual(report.slurm.gpus, [{ index: 2, visible: '0' }, { index: 3, visible: '1' }]);
  assert.equal(report.slurm.instanceGpu.instance, 2);
  const outside = await berth(['doctor', '--layout', LAYOUT], { env: { ...env, SLURM_STEP_GPUS: '8,9' } });
  assert.equal(outside.code, 1);
  assert.match(outside.stdout + outside.stderr, /fits instances 0-7, but GPU 8 of this job takes instance 8/);
  const plain = await berth(['doctor', '--layout', LAYOUT], { env: { BERTH_STATE_DIR: env.BERTH_STATE_DIR } });
  assert.doesNotMatch(plain.stdout, /Slurm job/);
});
