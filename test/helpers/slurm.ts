/**
 * The throw-away Slurm cluster of scripts/slurm/start.sh, for tests that run berth under a
 * real Slurm. One configuration serves every such test: three emulated nodes n1..n3 (all on
 * this host, one port space), 4 fake GPUs and 8 CPUs each. A single-node test pins its job
 * to n1 (-w n1). Outside CI, a machine where the cluster cannot start (not root, no apt)
 * skips loudly; in CI (CI=true) that is a failure.
 *
 * One cluster per clone, in a folder and a network namespace (`ip netns`, made afresh at
 * each start) named for the clone's path: a second copy of the suite on the same machine
 * runs its own cluster instead of restarting or stopping this one; its jobs never queue
 * behind ours, and their leases, ports and job ids are in another namespace, so neither
 * fills the other's bands nor meets the other's job 1 in `berth leases` or `release --job`.
 * Slurm's clients (sbatch, scontrol, scancel) run in that namespace too (inNetns). Test
 * files of one clone share its cluster (see stopCluster).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { TestContext } from 'node:test';

/** slurm.conf takes no quoting: the folder is under /tmp when TMPDIR has blanks. */
const TMP = /\s/.test(tmpdir()) ? '/tmp' : tmpdir();
const CLONE = createHash('sha256').update(resolve('.')).digest('hex').slice(0, 12);
export const SLURM_DIR = process.env.BERTH_SLURM_DIR || join(TMP, `berth-slurm-${CLONE}`);
/** The cluster's network namespace (scripts/slurm/start.sh SLURM_NETNS). */
export const SLURM_NETNS = `berth-slurm-${CLONE}`;
export const SLURM_CONF = join(SLURM_DIR, 'etc/slurm.conf');
const SCRIPTS = resolve('scripts/slurm');
/** The cluster every Slurm test uses (see the file comment). */
const CLUSTER_ENV = { BERTH_SLURM_DIR: SLURM_DIR, SLURM_NODES: '3', SLURM_FAKE_GPUS: '4', SLURM_CPUS: '8', SLURM_AUTH: 'none', SLURM_NETNS };

/** argv that runs `argv` in the cluster's network namespace, where slurmctld listens. */
export function inNetns(argv: string[]): string[] {
  return ['nsenter', `--net=/run/netns/${SLURM_NETNS}`, '--', ...argv];
}

let state: { ok: true; seconds: number; log: string } | { ok: false; why: string } | undefined;

/** Starts the cluster (once per test file); undefined when it runs, else why not. */
export function startCluster(): string | undefined {
  if (state) return state.ok ? undefined : state.why;
  if (process.getuid?.() !== 0) {
    state = { ok: false, why: 'scripts/slurm/start.sh must run as root' };
    return state.why;
  }
  const t0 = Date.now();
  // Registered by start.sh under its lock, so a file leaving at this moment cannot stop it under us.
  const env = { ...process.env, ...CLUSTER_ENV, BERTH_SLURM_USER: String(process.pid) };
  const r = spawnSync('bash', [join(SCRIPTS, 'start.sh')], { env, encoding: 'utf8', timeout: 600_000 });
  const log = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  state = r.status === 0 ? { ok: true, seconds: (Date.now() - t0) / 1000, log } : { ok: false, why: `scripts/slurm/start.sh failed (${r.error?.message ?? `exit ${r.status}`}):\n${log}` };
  if (state.ok) process.stderr.write(`# slurm cluster ready in ${state.seconds.toFixed(1)}s\n${log.replace(/^/gm, '# ')}\n`);
  return state.ok ? undefined : state.why;
}

/**
 * Leaves the cluster; stop.sh stops it when no other live test process of this clone uses it
 * (test files may run in parallel: the last one out stops it), unless BERTH_SLURM_KEEP is set.
 */
export function stopCluster(): void {
  if (!state?.ok || process.env.BERTH_SLURM_KEEP) return;
  spawnSync('bash', [join(SCRIPTS, 'stop.sh')], { env: { ...process.env, ...CLUSTER_ENV, BERTH_SLURM_RELEASE: String(process.pid) }, stdio: 'ignore', timeout: 60_000 });
}

/** Call first in a test that needs the cluster. Returns false when the test must skip. */
export function requireSlurm(t: TestContext): boolean {
  const why = startCluster();
  if (why === undefined) return true;
  if (process.env.CI) throw new Error(`Slurm test cannot run in CI: ${why}`);
  process.stderr.write(`\n!!! SKIPPING Slurm test "${t.name}": ${why}. In CI this is a failure.\n\n`);
  t.skip(`needs the local Slurm cluster: ${why}`);
  return false;
}

/** Environment for Slurm clients (and, through sbatch's --export=ALL, for the jobs). */
export function slurmEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  // The test runner's own Slurm variables (if it runs inside a job) must not leak into the jobs.
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SLURM_') && k !== 'CUDA_VISIBLE_DEVICES') env[k] = v;
  return { ...env, SLURM_CONF, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}`, NO_COLOR: '1', ...extra };
}

/** Run a Slurm client command (scontrol, sinfo…) synchronously; stdout. */
export function slurmCmd(argv: string[]): { code: number | null; stdout: string; stderr: string } {
  const ns = inNetns(argv);
  const r = spawnSync(ns[0]!, ns.slice(1), { env: slurmEnv(), encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

export interface JobResult {
  jobId: string;
  /** The batch script's exit status (128+N when killed by signal N); null when it never ended. */
  code: number | null;
  out: string;
  err: string;
  dir: string;
  seconds: number;
  /** Slurm's final JobState (COMPLETED, FAILED, …). */
  state?: string;
}

export interface SbatchOptions {
  /** sbatch options, e.g. ['-w', 'n1', '--gres=gpu:4']. */
  args: string[];
  env?: NodeJS.ProcessEnv;
  /** Kill and scancel after this long (default 120 s). */
  timeoutMs?: number;
  /** Working directory of the job (default: a fresh temp dir, also `dir` in the result). */
  dir?: string;
}

const FINAL_STATES = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY', 'PREEMPTED', 'BOOT_FAIL', 'DEADLINE']);

/** JobState and the exit status of a job (128+N for signal N), from `scontrol show job`. */
function jobState(id: string): { state: string; code: number | null } | undefined {
  const ns = inNetns(['scontrol', 'show', 'job', '-o', id]);
  const r = spawnSync(ns[0]!, ns.slice(1), { env: slurmEnv(), encoding: 'utf8', timeout: 10_000 });
  const state = /\bJobState=(\S+)/.exec(r.stdout ?? '')?.[1];
  const exit = /\bExitCode=(\d+):(\d+)/.exec(r.stdout ?? '');
  if (!state) return undefined;
  const code = exit ? (Number(exit[2]) > 0 ? 128 + Number(exit[2]) : Number(exit[1])) : null;
  return { state, code };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Submits `script` (bash) with sbatch and waits for it to end. Not `sbatch --wait`: that
 * polls every 2 s, then every 8 s, which would make most of the suite's time waiting.
 */
export async function sbatch(script: string, opts: SbatchOptions): Promise<JobResult> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'berth-slurm-job-'));
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'job.sh');
  writeFileSync(file, `#!/bin/bash\n${script}\n`, { mode: 0o755 });
  const argv = ['--parsable', '--time=5', `--chdir=${dir}`, `--output=${dir}/job.out`, `--error=${dir}/job.err`, ...opts.args, file];
  const t0 = Date.now();
  const ns = inNetns(['sbatch', ...argv]);
  const sub = spawnSync(ns[0]!, ns.slice(1), { env: slurmEnv(opts.env), encoding: 'utf8', timeout: 30_000 });
  const jobId = (sub.stdout ?? '').trim().split(';')[0] ?? '';
  const read = (f: string) => {
    try {
      return readFileSync(join(dir, f), 'utf8');
    } catch {
      return '';
    }
  };
  if (sub.status !== 0 || !/^\d+$/.test(jobId)) {
    return { jobId, code: null, out: '', err: `sbatch failed (${sub.error?.message ?? `exit ${sub.status}`}): ${sub.stderr}`, dir, seconds: 0 };
  }
  const deadline = t0 + (opts.timeoutMs ?? 120_000);
  let last: { state: string; code: number | null } | undefined;
  for (;;) {
    last = jobState(jobId);
    if (last && FINAL_STATES.has(last.state)) break;
    if (Date.now() > deadline) {
      const cancel = inNetns(['scancel', jobId]);
      spawnSync(cancel[0]!, cancel.slice(1), { env: slurmEnv() });
      return { jobId, code: null, out: read('job.out'), err: `${read('job.err')}\n[test] job ${jobId} still ${last?.state ?? 'unknown'} after ${opts.timeoutMs ?? 120_000} ms: cancelled`, dir, seconds: (Date.now() - t0) / 1000 };
    }
    await sleep(200);
  }
  return { jobId, code: last.code, out: read('job.out'), err: read('job.err'), dir, seconds: (Date.now() - t0) / 1000, state: last.state };
}

/** A job's result for assertion messages. */
export function describeJob(r: JobResult): string {
  return `job ${r.jobId} ${r.state ?? ''} exit ${r.code} after ${r.seconds.toFixed(1)}s in ${r.dir}\n--- stdout\n${r.out}\n--- stderr\n${r.err}`;
}
