import { BerthError, EXIT } from '../errors.js';
import { badVariable, parseEntryList, parseIndexList } from './env-values.js';

/*
 * The GPUs a job (or step) was given. Slurm gives jobs on one node disjoint GPUs, so a GPU's node-wide index is an
 * instance number no other job on the node can have. From, in order: SLURM_STEP_GPUS (srun steps) or SLURM_JOB_GPUS
 * (batch scripts), node-wide indices; else CUDA_VISIBLE_DEVICES, which Slurm renumbers from 0 under cgroup device
 * limits, so it is the index only when no SLURM_*_GPUS is set (e.g. outside Slurm).
 */

export type GpuSource = 'SLURM_STEP_GPUS' | 'SLURM_JOB_GPUS' | 'CUDA_VISIBLE_DEVICES';

export const GPU_SOURCES: readonly GpuSource[] = ['SLURM_STEP_GPUS', 'SLURM_JOB_GPUS', 'CUDA_VISIBLE_DEVICES'];

export interface Gpu {
  /** Node-wide index: the instance window this GPU's service takes. */
  index: number;
  /** Its entry in the job's CUDA_VISIBLE_DEVICES (an index, renumbered or not, or a UUID): what a process using it alone is given. */
  visible: string;
}

export interface GpuSet {
  /** The variable the indices were read from. */
  source: GpuSource;
  /** In the order the variable lists them. */
  gpus: Gpu[];
}

/**
 * The job's GPUs (outside Slurm too, from CUDA_VISIBLE_DEVICES alone), or undefined when none of the variables is set.
 * Throws BerthError(65) naming the variable for a bad list, and when CUDA_VISIBLE_DEVICES does not list as many GPUs as Slurm.
 */
export function readGpus(env: NodeJS.ProcessEnv = process.env): GpuSet | undefined {
  const cudaText = env.CUDA_VISIBLE_DEVICES;
  const cuda = cudaText === undefined ? undefined : parseEntryList('CUDA_VISIBLE_DEVICES', cudaText);
  for (const source of ['SLURM_STEP_GPUS', 'SLURM_JOB_GPUS'] as const) {
    const text = env[source];
    if (text === undefined) continue;
    const indices = parseIndexList(source, text);
    if (cuda !== undefined && cuda.length !== indices.length) {
      throw new BerthError(
        EXIT.DATAERR,
        `${source}=${JSON.stringify(text)} lists ${indices.length} GPU(s) but ` +
          `CUDA_VISIBLE_DEVICES=${JSON.stringify(cudaText)} lists ${cuda.length}; berth pairs them in order, so they must match (did something change ` +
            `CUDA_VISIBLE_DEVICES after Slurm set it?)`,
        { variable: 'CUDA_VISIBLE_DEVICES', value: cudaText, [source]: text },
      );
    }
    return { source, gpus: indices.map((index, i) => ({ index, visible: cuda ? cuda[i]! : String(index) })) };
  }
  if (cuda === undefined || cudaText === undefined) return undefined;
  const gpus = cuda.map((visible) => {
    if (!/^[0-9]{1,9}$/.test(visible)) {
      throw badVariable(
        'CUDA_VISIBLE_DEVICES',
        cudaText,
        `entry ${JSON.stringify(visible)} is not a GPU index, and neither SLURM_STEP_GPUS nor SLURM_JOB_GPUS is set to give one (berth needs numeric ` +
          `indices to pick instance windows)`,
      );
    }
    return { index: Number(visible), visible };
  });
  return { source: 'CUDA_VISIBLE_DEVICES', gpus };
}

/** The lowest GPU index of a set (its instance under `--instance gpu`). */
export function lowestGpu(set: GpuSet): Gpu {
  return set.gpus.reduce((best, g) => (g.index < best.index ? g : best), set.gpus[0]!);
}
