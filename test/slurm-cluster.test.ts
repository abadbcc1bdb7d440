/**
 * berth under a real Slurm (scripts/slurm/start.sh: Debian's Slurm 22.05, three emulated
 * nodes n1..n3 on this host, 4 fake GPUs each). In CI these run; elsewhere they skip loudly
 * unless root. BERTH_SLURM_KEEP=1 leaves the cluster running afterwards (faster reruns).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { compressHostlist, expandHostlist } from '../src/slurm/hostlist.js';
import { BERTH, tempStateDir } from './helpers/cli.js';
import { describeJob, requireSlurm, sbatch, slurmCmd, startCluster, stopCluster } from './helpers/slurm.js';

const LAYOUT = resolve('test/fixtures/slurm/layout.yaml');
const B = `"${process.execPath}" "${BERTH}"`;
const window = (lo: number, w: number, g: number) => ({ lo: lo + g * w, hi: lo + g * w + w - 1 });

before(() => {
  startCluster(); // errors surface in requireSlurm, per test
});
after(() => stopCluster());

test('hostlist expansion and compression equal scontrol show hostnames / hostlist', (t) => {
  if (!requireSlurm(t)) return;
  const lists = [
    'node[01-03,07]', 'gpu-a[1-2],gpu-b3', 'c[001-3]', 'd[8-11]', 'a[9-011]', 'a[01-1]', 'a[1-2]b[3-4]',
    'rack[1-2]-node[01-02]', 'n[1-2][3-4]', 'n[01-02],,n5', 'n1 n2', 'a[1-2,1]', '1[1-2]', 'a[0-0]', 'node',
    'x[098-101],y[7-9,10-11]', 'n[3,1-2,2]',
  ];
  for (const list of lists) {
    const r = slurmCmd(['scontrol', 'show', 'hostnames', list]);
    assert.equal(r.code, 0, `scontrol show hostnames ${list}: ${r.stderr}`);
    assert.deepEqual(expandHostlist(list), r.stdout.trim().split('\n'), list);
  }
  for (const bad of ['a[]', 'a[x]', 'x[5-3]', 'a[1-2]-x', 'a[1-3,5]b']) {
    // scontrol exits 0 even then; it says so on stderr and prints no host.
    const r = slurmCmd(['scontrol', 'show', 'hostnames', bad]);
    assert.match(r.stderr, /Invalid hostlist/, `scontrol rejects ${bad}`);
    assert.throws(() => expandHostlist(bad), undefined, bad);
  }
  for (const hosts of ['n3,n1,n2,n2', 'a09,a10,b9,b10,c1x', 'a1,a01', 'a008,a9,a010', 'a1,a2,b1,a3', '1,2,3', 'a01b3,a01b4', 'n1,n3,n5']) {
    const r = slurmCmd(['scontrol', 'show', 'hostlist', hosts]);
    assert.equal(compressHostlist(hosts.split(',')), r.stdout.trim(), hosts);
  }
});

test('one node, 4 GPUs: a task per GPU runs berth port --instance gpu; windows are disjoint, leases carry the job', async (t) => {
  if (!requireSlurm(t)) return;
  const state = tempStateDir();
  const r = await sbatch(
    `set -e
srun -n4 --gpus-per-task=1 bash -c 'echo "gpu $SLURM_STEP_GPUS $(${B} port --layout "${LAYOUT}" --band engines --instance gpu --count 2 --ttl 5m | xargs)"' > ports.txt
${B} leases --json > leases.json
${B} release --job "$SLURM_JOB_ID"
cat ports.txt`,
    { args: ['-w', 'n1', '-n4', '--gres=gpu:4'], env: { BERTH_STATE_DIR: state } },
  );
  assert.equal(r.code, 0, describeJob(r));
  const rows = r.out.trim().split('\n').filter((l) => l.startsWith('gpu ')).map((l) => l.split(' ').slice(1).map(Number));
  assert.equal(rows.length, 4, describeJob(r));
  assert.deepEqual(rows.map((x) => x[0]).sort(), [0, 1, 2, 3]);
  for (const [gpu, ...ports] of rows) {
    const w = window(21000, 100, gpu!);
    for (const p of ports) assert.ok(p >= w.lo && p <= w.hi, `GPU ${gpu}: port ${p} outside its window ${w.lo}-${w.hi}`);
  }
  assert.equal(new Set(rows.flatMap((x) => x.slice(1))).size, 8);
  const { readFileSync } = await import('node:fs');
  // The cluster's nodes share this host's network namespace, and so one lease domain with
  // whatever else runs here: this job's leases are the ones that carry its id.
  const all = JSON.parse(readFileSync(`${r.dir}/leases.json`, 'utf8')) as { slurmJobId?: string; slurmStepId?: string }[];
  const leases = all.filter((l) => l.slurmJobId === r.jobId);
  assert.equal(leases.length, 8, JSON.stringify(all.slice(0, 20)));
  for (const l of leases) {
    assert.equal(l.slurmJobId, r.jobId);
    assert.equal(l.slurmStepId, '0');
  }
  assert.match(r.out + r.err, /released/);
});

test('two concurrent 2-GPU jobs on one node: disjoint GPU windows, all ports distinct', async (t) => {
  if (!requireSlurm(t)) return;
  const state = tempStateDir();
  const { mkdtempSync, readdirSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const barrier = mkdtempSync(`${tmpdir()}/berth-slurm-barrier-`);
  // Each job waits until both run, so they really share the node while leasing.
  const script = `set -e
touch ${barrier}/$SLURM_JOB_ID
for i in $(seq 600); do [ $(ls ${barrier} | wc -l) -ge 2 ] && break; sleep 0.1; done
[ $(ls ${barrier} | wc -l) -ge 2 ] || { echo "the other job never started" >&2; exit 9; }
echo "job $SLURM_JOB_GPUS"
srun -n2 --gpus-per-task=1 bash -c 'echo "engine $SLURM_STEP_GPUS $(${B} port --layout "${LAYOUT}" --band engines --instance gpu --count 3 --ttl 5m | xargs)"'
echo "proxy $SLURM_JOB_GPUS $(${B} port --layout "${LAYOUT}" --band proxy --instance gpu --count 2 --ttl 5m | xargs)"`;
  const opts = { args: ['-w', 'n1', '-n2', '--gres=gpu:2'], env: { BERTH_STATE_DIR: state } };
  const [a, b] = await Promise.all([sbatch(script, opts), sbatch(script, opts)]);
  assert.equal(a.code, 0, describeJob(a));
  assert.equal(b.code, 0, describeJob(b));
  assert.equal(readdirSync(barrier).length, 2);
  const all: number[] = [];
  const gpusOf: number[][] = [];
  for (const r of [a, b]) {
    const lines = r.out.trim().split('\n').map((l) => l.split(' '));
    const jobGpus = lines.find((l) => l[0] === 'job')![1]!.split(',').map(Number);
    gpusOf.push(jobGpus);
    for (const l of lines.filter((x) => x[0] === 'engine')) {
      const g = Number(l[1]);
      assert.ok(jobGpus.includes(g), describeJob(r));
      const w = window(21000, 100, g);
      for (const p of l.slice(2).map(Number)) {
        assert.ok(p >= w.lo && p <= w.hi, `engine on GPU ${g}: ${p} outside ${w.lo}-${w.hi}`);
        all.push(p);
      }
    }
    const proxy = lines.find((l) => l[0] === 'proxy')!;
    const w = window(22000, 10, Math.min(...jobGpus));
    for (const p of proxy.slice(2).map(Number)) {
      assert.ok(p >= w.lo && p <= w.hi, `proxy of job ${r.jobId}: ${p} outside ${w.lo}-${w.hi}`);
      all.push(p);
    }
  }
  assert.deepEqual([...gpusOf[0]!, ...gpusOf[1]!].sort(), [0, 1, 2, 3], 'Slurm gave the jobs disjoint GPUs');
  assert.equal(all.length, 2 * (2 * 3 + 2));
  assert.equal(new Set(all).size, all.length, `ports repeat: ${all.join(' ')}`);
});

test('srun --resv-ports: berth port --source resv leases inside SLURM_STEP_RESV_PORTS', async (t) => {
  if (!requireSlurm(t)) return;
  const r = await sbatch(
    `srun -n2 --resv-ports=2 bash -c 'echo "$SLURM_STEP_RESV_PORTS $(${B} port --source resv --ttl 1m)"'
srun -n1 ${B} doctor --layout "${LAYOUT}"`,
    { args: ['-w', 'n2', '-n2', '--gres=gpu:1'], env: { BERTH_STATE_DIR: tempStateDir() } },
  );
  assert.equal(r.code, 0, describeJob(r));
  const lines = r.out.trim().split('\n');
  const resv = lines.filter((l) => /^\d+-\d+ \d+$/.test(l)).map((l) => l.split(' '));
  assert.equal(resv.length, 2, describeJob(r));
  const [lo, hi] = resv[0]![0]!.split('-').map(Number) as [number, number];
  const ports = resv.map((x) => Number(x[1]));
  for (const p of ports) assert.ok(p >= lo && p <= hi, `${p} outside ${lo}-${hi}`);
  assert.notEqual(ports[0], ports[1]);
  assert.match(r.out, new RegExp(`Slurm job ${r.jobId} step 1 on node n2; nodes n2 \\(1\\)`));
  assert.match(r.out, /engines +gpu 0: 21000-21099/);
});

// ---- berth up under Slurm ---------------------------------------------------------------------

const STACKS = resolve('test/fixtures/slurm');
const up = (stack: string) => `${B} up "${STACKS}/${stack}" --run-dir "$PWD/run"`;

interface Endpoints {
  replicas: { service: string; replica: number; port: number | null; state: string }[];
}
const endpointsOf = async (dir: string): Promise<Endpoints> => JSON.parse((await import('node:fs')).readFileSync(`${dir}/endpoints.json`, 'utf8')) as Endpoints;
const logOf = async (file: string): Promise<string> => (await import('node:fs')).readFileSync(file, 'utf8');

test('one node, 4 GPUs: berth up with replicas: gpus puts engine g in window g; the client completes', async (t) => {
  if (!requireSlurm(t)) return;
  const r = await sbatch(up('gpus-stack.yaml'), { args: ['-w', 'n1', '--gres=gpu:4'], env: { BERTH_STATE_DIR: tempStateDir() } });
  assert.equal(r.code, 0, describeJob(r));
  for (let g = 0; g < 4; g++) assert.match(r.out, new RegExp(`engine/${g} +10 requests`), describeJob(r));
  assert.match(r.out, /errors +0/);
  const eps = await endpointsOf(`${r.dir}/run`);
  const engines = eps.replicas.filter((x) => x.service === 'engine');
  assert.equal(engines.length, 4);
  for (const e of engines) {
    const w = window(21000, 100, e.replica); // GPUs 0-3: replica r is on GPU r here
    assert.ok(e.port! >= w.lo && e.port! <= w.hi, `engine/${e.replica} on ${e.port}, outside ${w.lo}-${w.hi}`);
  }
  for (let g = 0; g < 4; g++) {
    assert.equal((await logOf(`${r.dir}/run/logs/gpu-check-${g}.out`)).trim(), `gpu=${g} BERTH_GPU=${g} CUDA_VISIBLE_DEVICES=${g}`);
  }
});

test('two concurrent 2-GPU jobs on one node run the same stack: disjoint windows, all ports distinct', async (t) => {
  if (!requireSlurm(t)) return;
  const state = tempStateDir();
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const barrier = mkdtempSync(`${tmpdir()}/berth-slurm-barrier-`);
  const script = `touch ${barrier}/$SLURM_JOB_ID
for i in $(seq 600); do [ $(ls ${barrier} | wc -l) -ge 2 ] && break; sleep 0.1; done
echo "job gpus $SLURM_JOB_GPUS"
${up('gpus-stack.yaml')}`;
  const opts = { args: ['-w', 'n1', '--gres=gpu:2'], env: { BERTH_STATE_DIR: state } };
  const [a, b] = await Promise.all([sbatch(script, opts), sbatch(script, opts)]);
  assert.equal(a.code, 0, describeJob(a));
  assert.equal(b.code, 0, describeJob(b));
  const ports: number[] = [];
  const gpus: number[] = [];
  for (const r of [a, b]) {
    const jobGpus = /job gpus (\S+)/.exec(r.out)![1]!.split(',').map(Number);
    gpus.push(...jobGpus);
    for (const g of jobGpus) assert.match(r.out, new RegExp(`engine/${g} +\\d+ requests`), describeJob(r));
    const eps = await endpointsOf(`${r.dir}/run`);
    for (const e of eps.replicas) {
      if (e.port === null) continue;
      ports.push(e.port);
      if (e.service !== 'engine') continue;
      const w = window(21000, 100, jobGpus[e.replica]!);
      assert.ok(e.port >= w.lo && e.port <= w.hi, `job ${r.jobId} engine/${e.replica} (GPU ${jobGpus[e.replica]}) on ${e.port}, outside ${w.lo}-${w.hi}`);
    }
  }
  assert.deepEqual(gpus.sort(), [0, 1, 2, 3]);
  assert.equal(ports.length, 2 * 3, 'two engines and a proxy per job');
  assert.equal(new Set(ports).size, ports.length, `ports repeat: ${ports.join(' ')}`);
});

test('three emulated nodes: engines on every node through srun agents, proxy and client on the first', async (t) => {
  if (!requireSlurm(t)) return;
  const r = await sbatch(up('nodes-stack.yaml'), { args: ['-N3'], env: { BERTH_STATE_DIR: tempStateDir() } });
  assert.equal(r.code, 0, describeJob(r));
  for (const n of [0, 1, 2]) assert.match(r.out, new RegExp(`engine/${n} +20 requests`), describeJob(r));
  assert.match(r.out, /errors +0/);
  assert.match(r.err, /berth: starting engine on n\[1-3\] \(one agent per node, srun step/);
  const ports: number[] = [];
  for (const node of ['n1', 'n2', 'n3']) {
    const f = JSON.parse(await logOf(`${r.dir}/run/nodes/${node}.json`)) as { state: string; services: { engine: { port: number; host: string }[] } };
    assert.equal(f.state, 'stopped', `${node}: ${JSON.stringify(f)}`);
    assert.equal(f.services.engine.length, 1);
    assert.equal(f.services.engine[0]!.host, '0.0.0.0');
    ports.push(f.services.engine[0]!.port);
    assert.match(await logOf(`${r.dir}/run/nodes/${node}/logs/engine-0.out`), /listening on 0\.0\.0\.0:\d+.*\n(.*\n)*.*loaded/);
  }
  // The emulated nodes share one port space: concurrent agents still never collide.
  assert.equal(new Set(ports).size, 3, `engine ports ${ports.join(' ')}`);
  // {engine.urls} named each node by its NodeAddr (127.0.0.1: the names n1..n3 do not resolve).
  const urls = ['n1', 'n2', 'n3'].map((_, i) => `http://127.0.0.1:${ports[i]}`).join(' ');
  assert.match(await logOf(`${r.dir}/run/logs/proxy-0.out`), new RegExp(`round-robin over 3 backends: ${urls.replace(/\./g, '\\.')}`));
});

test('a failing node ends the job with exit 70 and its diagnostics in the run directory', async (t) => {
  if (!requireSlurm(t)) return;
  const r = await sbatch(up('nodes-stack-fail.yaml'), { args: ['-N3'], env: { BERTH_STATE_DIR: tempStateDir() } });
  assert.equal(r.code, 70, describeJob(r));
  assert.match(r.err, /engine\/0 failed: on node n2: the service exited with status 3 before it was ready/, describeJob(r));
  assert.match(r.err, /diagnostics: run\/nodes\/n2\/diagnostics\/engine-0\//);
  const diag = JSON.parse(await logOf(`${r.dir}/run/nodes/n2/diagnostics/engine-0/diagnostics.json`)) as { phase?: string };
  assert.ok(diag.phase, 'diagnostics.json has the phase');
  assert.match(await logOf(`${r.dir}/run/nodes/n2/diagnostics/engine-0/stderr.log`), /failed to load model/);
  const n2 = JSON.parse(await logOf(`${r.dir}/run/nodes/n2.json`)) as { state: string; exitCode: number };
  assert.deepEqual([n2.state, n2.exitCode], ['failed', 70]);
  // The other nodes were stopped, not left running; the client never started. srun must not
  // have aborted the step (it kills every agent before it stops: agents-step.ts says when).
  const agents = await logOf(`${r.dir}/run/agents.log`);
  assert.doesNotMatch(agents, /Job step aborted|io error with slurmstepd/, agents);
  for (const node of ['n1', 'n3']) {
    const f = JSON.parse(await logOf(`${r.dir}/run/nodes/${node}.json`)) as { state: string };
    assert.equal(f.state, 'stopped', `${node}\n--- agents.log\n${agents}`);
  }
  assert.doesNotMatch(r.out, /client: \d+ requests/);
});
