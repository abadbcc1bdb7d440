/**
 * How long a job restarted as a group (issue 29) takes from a rank's failure to every rank of
 * the next generation started, on one host: 3 ranks, `stop_grace: 2s`, rank 2 exits 3 at once
 * in generation 0, the others are `sleep`s that end on SIGTERM at once. Both ends are read from
 * events.jsonl, which berth stamps itself: the failing rank's `failed`/`exited` line of
 * generation 0, and the last `starting` line of generation 1. The target is stop_grace + 1 s;
 * the median of RUNS runs is reported. Each run in a fresh network namespace when possible.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { netnsArgv, netnsUnavailable } from '../test/helpers/netns.js';

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

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) console.log(JSON.stringify(await benchGenerations()));
