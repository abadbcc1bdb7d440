import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BerthError } from '../src/errors.js';
import { readGpus } from '../src/slurm/gpus.js';
import { readSlurmEnv } from '../src/slurm/env.js';
import { resolveInstance, stepResvPorts } from '../src/slurm/instance.js';
import { renderJobSummary, slurmJobReport } from '../src/slurm/job-summary.js';
import { resolveSource } from '../src/cli/source.js';
import type { HostSysctls } from '../src/host/host-map.js';

// Environments as Slurm 22.05 sets them (captured on the test cluster: an srun step of a
// 2-GPU sbatch job sharing node n1 with another job that holds GPUs 0 and 1).
const STEP = {
  SLURM_JOB_ID: '2',
  SLURM_JOBID: '2',
  SLURM_STEP_ID: '0',
  SLURM_STEPID: '0',
  SLURM_NODEID: '0',
  SLURM_LOCALID: '1',
  SLURM_PROCID: '1',
  SLURMD_NODENAME: 'n1',
  SLURM_JOB_NODELIST: 'n1',
  SLURM_NODELIST: 'n1',
  SLURM_STEP_NODELIST: 'n1',
  SLURM_TASKS_PER_NODE: '2',
  SLURM_SUBMIT_DIR: '/work/main',
  SLURM_JOB_GPUS: '2,3',
  SLURM_STEP_GPUS: '2,3',
  CUDA_VISIBLE_DEVICES: '2,3',
  SLURM_STEP_RESV_PORTS: '12001-12003',
};

const isErr = (code: number, re: RegExp) => (e: unknown) => e instanceof BerthError && e.exitCode === code && re.test(e.message);

test('readSlurmEnv: undefined outside a job; one typed value inside', () => {
  assert.equal(readSlurmEnv({ CUDA_VISIBLE_DEVICES: '0', PATH: '/bin' }), undefined);
  assert.deepEqual(readSlurmEnv(STEP), {
    jobId: '2',
    stepId: '0',
    nodeId: 0,
    localId: 1,
    procId: 1,
    nodeName: 'n1',
    nodeList: ['n1'],
    stepNodeList: ['n1'],
    tasksPerNode: [2],
    submitDir: '/work/main',
    gpus: { source: 'SLURM_STEP_GPUS', gpus: [{ index: 2, visible: '2' }, { index: 3, visible: '3' }] },
    resvPorts: [{ lo: 12001, hi: 12003 }],
  });
  const batch = readSlurmEnv({
    SLURM_JOBID: '77',
    SLURM_NODELIST: 'gpu-a[01-02],gpu-b3',
    SLURM_TASKS_PER_NODE: '2(x2),1',
    SLURM_ARRAY_JOB_ID: '70',
    SLURM_ARRAY_TASK_ID: '7',
  })!;
  assert.equal(batch.jobId, '77');
  assert.equal(batch.stepId, undefined);
  assert.deepEqual(batch.nodeList, ['gpu-a01', 'gpu-a02', 'gpu-b3']);
  assert.deepEqual(batch.tasksPerNode, [2, 2, 1]);
  assert.equal(batch.arrayJobId, '70');
  assert.equal(batch.arrayTaskId, 7);
  assert.equal(batch.gpus, undefined);
});

test('readSlurmEnv: invalid values are BerthError 65 naming the variable', () => {
  const bad: [Record<string, string>, RegExp][] = [
    [{ SLURM_JOB_ID: '' }, /^SLURM_JOB_ID="": is empty/],
    [{ SLURM_JOB_ID: '12a' }, /^SLURM_JOB_ID="12a": is not a whole number/],
    [{ SLURM_STEP_ID: 'x' }, /^SLURM_STEP_ID="x"/],
    [{ SLURM_LOCALID: '-1' }, /^SLURM_LOCALID="-1"/],
    [{ SLURM_JOB_NODELIST: 'n[3-1]' }, /^SLURM_JOB_NODELIST="n\[3-1\]": range 3-1 runs backwards/],
    [{ SLURM_JOB_NODELIST: ' ' }, /^SLURM_JOB_NODELIST=" ": names no node/],
    [{ SLURM_TASKS_PER_NODE: '2(x' }, /^SLURM_TASKS_PER_NODE="2\(x"/],
    [{ SLURM_STEP_GPUS: '' }, /^SLURM_STEP_GPUS="": is empty/],
    [{ SLURM_STEP_GPUS: '0,0' }, /^SLURM_STEP_GPUS="0,0": lists 0 twice/],
    [{ SLURM_JOB_GPUS: '0,,1' }, /^SLURM_JOB_GPUS="0,,1": has an empty entry/],
    [{ SLURM_JOB_GPUS: '0,gpu1' }, /^SLURM_JOB_GPUS="0,gpu1": entry "gpu1" is not an index/],
    [{ CUDA_VISIBLE_DEVICES: '' }, /^CUDA_VISIBLE_DEVICES="": is empty/],
    [{ CUDA_VISIBLE_DEVICES: '1,1' }, /^CUDA_VISIBLE_DEVICES="1,1": lists 1 twice/],
    [{ CUDA_VISIBLE_DEVICES: 'GPU-8f2e' }, /^CUDA_VISIBLE_DEVICES="GPU-8f2e": entry "GPU-8f2e" is not a GPU index/],
    [{ SLURM_STEP_GPUS: '0,1', CUDA_VISIBLE_DEVICES: '0' }, /^SLURM_STEP_GPUS="0,1" lists 2 GPU\(s\) but CUDA_VISIBLE_DEVICES="0" lists 1/],
    [{ SLURM_STEP_RESV_PORTS: '70000' }, /^SLURM_STEP_RESV_PORTS="70000": port 70000 is not a TCP port/],
    [{ SLURM_STEP_RESV_PORTS: '' }, /^SLURM_STEP_RESV_PORTS="": is empty/],
  ];
  for (const [vars, re] of bad) {
    assert.throws(() => readSlurmEnv({ SLURM_JOB_ID: '5', ...vars }), isErr(65, re), JSON.stringify(vars));
  }
  try {
    readSlurmEnv({ SLURM_JOB_ID: '5', SLURM_STEP_GPUS: '1,x' });
  } catch (e) {
    assert.equal((e as BerthError).details?.variable, 'SLURM_STEP_GPUS');
  }
});

test('GPUs: step before job before CUDA_VISIBLE_DEVICES; renumbered and UUID entries pair in order', () => {
  assert.equal(readGpus({}), undefined);
  // cgroup device limits renumber CUDA_VISIBLE_DEVICES from 0; the index is Slurm's.
  assert.deepEqual(readGpus({ SLURM_JOB_GPUS: '2,3', CUDA_VISIBLE_DEVICES: '0,1' }), {
    source: 'SLURM_JOB_GPUS',
    gpus: [{ index: 2, visible: '0' }, { index: 3, visible: '1' }],
  });
  assert.equal(readGpus({ SLURM_STEP_GPUS: '5', SLURM_JOB_GPUS: '4,5' })!.source, 'SLURM_STEP_GPUS');
  assert.deepEqual(readGpus({ SLURM_STEP_GPUS: '1', CUDA_VISIBLE_DEVICES: 'GPU-aa' })!.gpus, [{ index: 1, visible: 'GPU-aa' }]);
  assert.deepEqual(readGpus({ CUDA_VISIBLE_DEVICES: '3,1' }), { source: 'CUDA_VISIBLE_DEVICES', gpus: [{ index: 3, visible: '3' }, { index: 1, visible: '1' }] });
  assert.deepEqual(readGpus({ SLURM_JOB_GPUS: '0-2' })!.gpus.map((g) => g.index), [0, 1, 2]);
});

test('instances: auto = BERTH_INSTANCE, else SLURM_LOCALID; gpu = lowest GPU index', () => {
  assert.deepEqual(resolveInstance('auto', { BERTH_INSTANCE: '4', SLURM_LOCALID: '1' }), { instance: 4, from: 'BERTH_INSTANCE' });
  assert.deepEqual(resolveInstance('auto', { SLURM_LOCALID: '1' }), { instance: 1, from: 'SLURM_LOCALID' });
  assert.throws(() => resolveInstance('auto', {}), isErr(64, /neither BERTH_INSTANCE nor SLURM_LOCALID is set/));
  assert.throws(() => resolveInstance('auto', { BERTH_INSTANCE: 'two' }), isErr(65, /^BERTH_INSTANCE="two"/));
  assert.deepEqual(resolveInstance('gpu', { SLURM_STEP_GPUS: '3,2', SLURM_JOB_GPUS: '0,1,2,3', CUDA_VISIBLE_DEVICES: '0,1' }), { instance: 2, from: 'SLURM_STEP_GPUS' });
  assert.deepEqual(resolveInstance('gpu', { SLURM_JOB_GPUS: '6,7', CUDA_VISIBLE_DEVICES: '0,1' }), { instance: 6, from: 'SLURM_JOB_GPUS' });
  assert.deepEqual(resolveInstance('gpu', { CUDA_VISIBLE_DEVICES: '1' }), { instance: 1, from: 'CUDA_VISIBLE_DEVICES' });
  assert.throws(() => resolveInstance('gpu', { SLURM_JOB_ID: '3' }), isErr(64, /no GPU/));
});

test('resv ports: SLURM_STEP_RESV_PORTS as ranges; unset is a usage error', () => {
  assert.deepEqual(stepResvPorts({ SLURM_JOB_ID: '1', SLURM_STEP_RESV_PORTS: '12998-12999,12000,12002' }), [
    { lo: 12998, hi: 12999 },
    { lo: 12000, hi: 12000 },
    { lo: 12002, hi: 12002 },
  ]);
  assert.throws(() => stepResvPorts({ SLURM_JOB_ID: '1' }), isErr(64, /SLURM_STEP_RESV_PORTS is not set in job 1 \(batch script, not a step\)/));
  assert.throws(() => stepResvPorts({}), isErr(64, /not in a Slurm job/));
});

const HOST: HostSysctls = { ephemeral: { lo: 32768, hi: 60999 }, reserved: [], unprivilegedStart: 1024 } as unknown as HostSysctls;
const LAYOUT = 'test/fixtures/slurm/layout.yaml';

test('CLI sources: --instance auto|gpu pick windows, --source resv the longest reserved run', async () => {
  const gpuSrc = await resolveSource('port', { layout: LAYOUT, band: 'engines', instance: 'gpu' }, HOST, STEP);
  assert.deepEqual(gpuSrc, { kind: 'band', band: 'engines', range: { lo: 21200, hi: 21299 }, layoutFile: LAYOUT, instance: 2 });
  const autoSrc = await resolveSource('port', { layout: LAYOUT, band: 'engines', instance: 'auto' }, HOST, STEP);
  assert.deepEqual(autoSrc.kind === 'band' && autoSrc.range, { lo: 21100, hi: 21199 });
  const third = await resolveSource('port', { layout: LAYOUT, band: 'engines', instance: '3' }, HOST, {});
  assert.deepEqual(third.kind === 'band' && third.range, { lo: 21300, hi: 21399 });
  assert.deepEqual(await resolveSource('port', { source: 'resv' }, HOST, { ...STEP, SLURM_STEP_RESV_PORTS: '12999,12000-12002' }), { kind: 'range', range: { lo: 12000, hi: 12002 } });
  await assert.rejects(() => resolveSource('port', { source: 'resv', port: '5' }, HOST, STEP), isErr(64, /give one source/));
  await assert.rejects(() => resolveSource('port', { source: 'nodes' }, HOST, STEP), isErr(64, /the only named source is "resv"/));
  await assert.rejects(() => resolveSource('port', { source: 'resv' }, HOST, { SLURM_JOB_ID: '9' }), isErr(64, /^port: --source resv: SLURM_STEP_RESV_PORTS is not set/));
  await assert.rejects(() => resolveSource('port', { layout: LAYOUT, band: 'engines', instance: 'gpu' }, HOST, {}), isErr(64, /^port: --instance gpu: this process was given no GPU/));
  await assert.rejects(() => resolveSource('port', { layout: LAYOUT, band: 'engines', instance: 'gpus' }, HOST, {}), isErr(64, /expected a whole number ≥ 0, auto or gpu/));
  await assert.rejects(() => resolveSource('port', { layout: LAYOUT, band: 'engines', instance: 'gpu' }, HOST, { SLURM_STEP_GPUS: '9' }), isErr(64, /instance 9 is outside the band, which fits 8 instances/));
  await assert.rejects(() => resolveSource('port', { layout: LAYOUT, band: 'engines', instance: 'gpu' }, HOST, { SLURM_STEP_GPUS: '1,1' }), isErr(65, /SLURM_STEP_GPUS="1,1": lists 1 twice/));
});

test('doctor summary: the job, its GPUs and the windows they take; GPUs outside a band are errors', async () => {
  const { parseLayout } = await import('../src/layout/parse.js');
  const layout = parseLayout('bands:\n  engines: { range: 21000-21399, window: 100 }\n  proxy: { range: 22000-22009 }\n', 'l.yaml');
  assert.deepEqual(slurmJobReport(layout, {}), { findings: [] });
  const r = slurmJobReport(layout, STEP);
  assert.deepEqual(r.findings, []);
  assert.deepEqual(r.summary!.windows, [
    { band: 'engines', by: 'gpu', instance: 2, gpu: 2, range: { lo: 21200, hi: 21299 } },
    { band: 'engines', by: 'gpu', instance: 3, gpu: 3, range: { lo: 21300, hi: 21399 } },
    { band: 'engines', by: 'auto', instance: 1, range: { lo: 21100, hi: 21199 } },
  ]);
  const text = renderJobSummary(r.summary!);
  assert.match(text, /^Slurm job 2 step 0 on node n1; nodes n1 \(1\)/);
  assert.match(text, /GPUs \(SLURM_STEP_GPUS\): 2, 3/);
  assert.match(text, /--instance gpu: +2 \(SLURM_STEP_GPUS\)/);
  assert.match(text, /--source resv: +12001-12003/);
  assert.match(text, /engines {2}gpu 2: 21200-21299 {3}gpu 3: 21300-21399 {3}auto: 21100-21199/);
  const far = slurmJobReport(layout, { ...STEP, SLURM_STEP_GPUS: '4,5', CUDA_VISIBLE_DEVICES: '0,1' });
  assert.equal(far.findings.length, 2);
  assert.match(far.findings[0]!.message, /band "engines" \(21000-21399, window 100\) fits instances 0-3, but GPU 4 of this job takes instance 4: .*widen the band to at least 21000-21499/);
  const broken = slurmJobReport(layout, { SLURM_JOB_ID: '3', SLURM_JOB_GPUS: '0,0' });
  assert.equal(broken.summary, undefined);
  assert.equal(broken.findings[0]!.code, 'slurm-env-invalid');
});

test('replicas: gpus plans one replica per GPU, window = GPU index, CUDA_VISIBLE_DEVICES as the job sees it', async () => {
  const { gpuReplicas } = await import('../src/slurm/replicas.js');
  assert.deepEqual(gpuReplicas('engine', { SLURM_JOB_GPUS: '2,3', CUDA_VISIBLE_DEVICES: '0,1' }), {
    source: 'SLURM_JOB_GPUS',
    replicas: [
      { replica: 0, gpu: 2, cudaVisibleDevices: '0' },
      { replica: 1, gpu: 3, cudaVisibleDevices: '1' },
    ],
  });
  assert.throws(() => gpuReplicas('engine', {}), isErr(65, /^service "engine": replicas: gpus, but this job has no GPU/));
  assert.throws(() => gpuReplicas('engine', { SLURM_JOB_GPUS: '1,1' }), isErr(65, /^service "engine": replicas: gpus: SLURM_JOB_GPUS="1,1": lists 1 twice/));
});

test('node addresses: the name when it resolves, else NodeAddr from scontrol; neither is an error', async () => {
  const { nodeAddresses, parseNodeAddrs } = await import('../src/slurm/nodes.js');
  const scontrolOut = 'NodeName=n1 Arch=x86_64 NodeAddr=127.0.0.1 NodeHostName=vm Port=17818\nNodeName=n2 NodeAddr=10.0.0.2 NodeHostName=n2\nNodeName=n3 NodeAddr=n3 NodeHostName=n3\n';
  assert.deepEqual([...parseNodeAddrs(scontrolOut)], [['n1', '127.0.0.1'], ['n2', '10.0.0.2'], ['n3', 'n3']]);
  const asked: string[] = [];
  const resolve = async (n: string) => (n === 'gpu1' ? '10.1.1.1' : undefined);
  const scontrol = async (list: string) => (asked.push(list), scontrolOut);
  assert.deepEqual([...(await nodeAddresses(['gpu1', 'n1', 'n2'], { resolve, scontrol }))], [['gpu1', 'gpu1'], ['n1', '127.0.0.1'], ['n2', '10.0.0.2']]);
  assert.deepEqual(asked, ['n[1-2]']);
  await assert.rejects(nodeAddresses(['n3'], { resolve, scontrol }), isErr(69, /node\(s\) n3: the name does not resolve/));
});
