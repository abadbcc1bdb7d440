/**
 * How long a job restarted as a group (issue 29) takes from a rank's failure to every rank of
 * the next generation started, on one host: 3 ranks, `stop_grace: 2s`, rank 2 exits 3 at once
 * in generation 0, the others are `sleep`s that end on SIGTERM at once. Both ends are read from
 * events.jsonl, which berth stamps itself: the failing rank's `failed`/`exited` line of
 * generation 0, and the last `starting` line of generation 1. The target is stop_grace + 1 s;
 * the median of RUNS runs is reported. Each run in a fresh network namespace when possible.
 * Across nodes, on the test Slurm cluster (3 nodes, one rank each, stop_grace 2s): from the
 * failing rank's exit on n2 (its agent's events.jsonl) to the last generation-1 rank started
 * on any node; target stop_grace + 2 s.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { netnsArgv, netnsUnavailable } from '../test/helpers/netns.js';
import { sbatch, startCluster, stopCluster } from '../test/helpers/slurm.js';

const ROOT = resolve(import.meta.dirname, '..');
const BERTH = process.env.BERTH_BENCH_BIN ?? join(ROOT, 'dist/berth.js');
const RUNS = 5;
export const STOP_GRACE_MS = 2_000;

const STACK = `services:
  trainer:
    job: true
    replicas: 3
    restart: on-failure
    restart_limit: 1
    stop_grace: ${STOP_GRACE_MS}ms
    range: 24000-24099
    ports: { master: shared }
    env: { RANK: "{rank}" }
    command: [sh, -c, 'if [ "$BERTH_GENERATION" = 0 ] && [ "$RANK" = 2 ]; then exit 3; fi; [ "$BERTH_GENERATION" = 1 ] && exit 0; exec sleep 60']
`;

function runOnce(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-bench-gen-'));
  const stack = join(dir, 'stack.yaml');
  writeFileSync(stack, STACK);
  const runDir = join(dir, 'run');
  const argv = [...(netnsUnavailable() === undefined ? netnsArgv({}) : []), process.execPath, BERTH, 'up', stack, '--run-dir', runDir];
  return new Promise((res, rej) => {
    const c = spawn(argv[0]!, argv.slice(1), { stdio: 'ignore', env: { ...process.env, BERTH_STATE_DIR: join(dir, 'state') } });
    const timer = setTimeout(() => c.kill('SIGKILL'), 60_000);
    c.on('close', (code) => {
      clearTimeout(timer);
      try {
        const evs = readFileSync(join(runDir, 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { t: string; replica: number; state: string; generation?: number });
        const failed = evs.find((e) => e.replica === 2 && (e.generation ?? 0) === 0 && (e.state === 'failed' || e.state === 'exited'));
        const started = evs.filter((e) => e.generation === 1 && e.state === 'starting');
        if (code !== 0 || !failed || started.length !== 3) return rej(new Error(`generation bench: exit ${code}, ${started.length} ranks of generation 1 started`));
        res(Math.max(...started.map((e) => Date.parse(e.t))) - Date.parse(failed.t));
      } catch (e) {
        rej(e);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

export async function benchGenerations(): Promise<{ medianMs: number; samples: number[]; stopGraceMs: number }> {
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) samples.push(await runOnce());
  const sorted = [...samples].sort((a, b) => a - b);
  return { medianMs: sorted[sorted.length >> 1]!, samples, stopGraceMs: STOP_GRACE_MS };
}

type Ev = { t: string; replica: number; state: string; generation?: number };
const eventsOf = (file: string): Ev[] => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Ev);

/** undefined when the test Slurm cluster cannot start here (not root, no Slurm). */
export async function benchGenerationsNodes(): Promise<{ medianMs: number; samples: number[]; stopGraceMs: number } | { why: string }> {
  const why = startCluster();
  if (why !== undefined) return { why };
  try {
    const stack = join(ROOT, 'test/fixtures/slurm/rank-job-restart.yaml');
    const samples: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const state = mkdtempSync(join(tmpdir(), 'berth-bench-gen-state-'));
      const r = await sbatch(`"${process.execPath}" "${BERTH}" up ${stack} --run-dir "$PWD/run"`, { args: ['-N3'], env: { BERTH_STATE_DIR: state, FAIL_RANK: '1', FAIL_GENERATION: '0' }, timeoutMs: 120_000 });
      rmSync(state, { recursive: true, force: true });
      if (r.code !== 0) throw new Error(`generation bench across nodes: exit ${r.code}: ${r.err.slice(-600)}`);
      const failed = eventsOf(join(r.dir, 'run/nodes/n2/events.jsonl')).find((e) => (e.generation ?? 0) === 0 && (e.state === 'exited' || e.state === 'failed'));
      const started = ['n1', 'n2', 'n3'].map((n) => eventsOf(join(r.dir, `run/nodes/${n}/events.jsonl`)).find((e) => e.generation === 1 && e.state === 'starting'));
      if (!failed || started.some((e) => e === undefined)) throw new Error('generation bench across nodes: a generation-1 rank did not start');
      samples.push(Math.max(...started.map((e) => Date.parse(e!.t))) - Date.parse(failed.t));
      rmSync(r.dir, { recursive: true, force: true });
    }
    const sorted = [...samples].sort((a, b) => a - b);
    return { medianMs: sorted[sorted.length >> 1]!, samples, stopGraceMs: STOP_GRACE_MS };
  } finally {
    stopCluster();
  }
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) console.log(JSON.stringify({ oneHost: await benchGenerations(), nodes: await benchGenerationsNodes() }));
