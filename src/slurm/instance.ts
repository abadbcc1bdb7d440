import { BerthError, EXIT } from '../errors.js';
import type { PortRange } from '../host/host-map.js';
import { parseUint } from './env-values.js';
import { lowestGpu, readGpus } from './gpus.js';
import { readSlurmEnv } from './env.js';

/*
 * Instance numbers that jobs sharing a node cannot both have, and the ports of a step. auto: BERTH_INSTANCE
 * (the user decides), else SLURM_LOCALID (distinct between a step's tasks on a node); gpu: the job's lowest GPU (gpus.ts).
 */

export type InstanceMode = 'auto' | 'gpu';

export interface ResolvedInstance {
  instance: number;
  /** Where it came from, for messages and --json: "BERTH_INSTANCE", "SLURM_LOCALID", "SLURM_STEP_GPUS" … */
  from: string;
}

export function resolveInstance(mode: InstanceMode, env: NodeJS.ProcessEnv = process.env): ResolvedInstance {
  if (mode === 'auto') {
    if (env.BERTH_INSTANCE !== undefined) return { instance: parseUint('BERTH_INSTANCE', env.BERTH_INSTANCE), from: 'BERTH_INSTANCE' };
    if (env.SLURM_LOCALID !== undefined) return { instance: parseUint('SLURM_LOCALID', env.SLURM_LOCALID), from: 'SLURM_LOCALID' };
    throw new BerthError(
      EXIT.USAGE,
      '--instance auto: neither BERTH_INSTANCE nor SLURM_LOCALID is set; run inside a Slurm job step (srun), set BERTH_INSTANCE=N, or give --instance N',
    );
  }
  const set = readGpus(env);
  if (!set || set.gpus.length === 0) {
    throw new BerthError(
      EXIT.USAGE,
      '--instance gpu: this process was given no GPU (SLURM_STEP_GPUS, SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES are unset); ask Slurm for one (--gres=gpu:1 ' +
        'or --gpus=1), or give --instance N',
    );
  }
  return { instance: lowestGpu(set).index, from: set.source };
}

/**
 * The ports srun reserved for this step (srun --resv-ports), from SLURM_STEP_RESV_PORTS.
 * Throws BerthError(64) when it is unset: berth cannot reserve ports with Slurm itself.
 */
export function stepResvPorts(env: NodeJS.ProcessEnv = process.env): PortRange[] {
  const slurm = readSlurmEnv(env);
  if (!slurm && env.SLURM_STEP_RESV_PORTS !== undefined) {
    // Set by hand or left from another shell: without the job it cannot be Slurm's reservation.
    throw new BerthError(
      EXIT.USAGE,
      `--source resv: SLURM_STEP_RESV_PORTS is set (${JSON.stringify(env.SLURM_STEP_RESV_PORTS.slice(0, 40))}) but SLURM_JOB_ID is not, so this is not a ` +
        `Slurm job step and the ports are nobody's reservation; run the command in a step started with 'srun --resv-ports=N …', ` +
        `or lease ports with --range LO-HI instead`,
    );
  }
  if (!slurm?.resvPorts) {
    const where = slurm
      ? `job ${slurm.jobId}${slurm.stepId !== undefined ? ` step ${slurm.stepId}` : ' (batch script, not a step)'}`
      : 'this process (not in a Slurm job)';
    throw new BerthError(
      EXIT.USAGE,
      `--source resv: SLURM_STEP_RESV_PORTS is not set in ${where}; run the command in a step started with 'srun --resv-ports=N …' (Slurm's ` +
        `MpiParams=ports=LO-HI must be configured)`,
    );
  }
  return slurm.resvPorts;
}
