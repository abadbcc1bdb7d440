import { BerthError, EXIT } from '../errors.js';
import { readGpus, type GpuSource } from './gpus.js';

/** One replica of a `replicas: gpus` service. */
export interface GpuReplica {
  replica: number;
  /** Node-wide GPU index: `{gpu}`, and the band window the replica takes. */
  gpu: number;
  /** CUDA_VISIBLE_DEVICES for this replica: the GPU as the job sees it. */
  cudaVisibleDevices: string;
}

export interface GpuReplicaPlan {
  source: GpuSource;
  replicas: GpuReplica[];
}

/**
 * `replicas: gpus`: one replica per GPU of the job (or step), in Slurm's order. Replica r runs on GPU g and takes
 * window g, not r, so jobs sharing a node never collide. Throws BerthError(65) naming the service (and any bad variable).
 */
export function gpuReplicas(service: string, env: NodeJS.ProcessEnv = process.env): GpuReplicaPlan {
  let set;
  try {
    set = readGpus(env);
  } catch (e) {
    if (e instanceof BerthError) throw new BerthError(e.exitCode, `service "${service}": replicas: gpus: ${e.message}`, e.details);
    throw e;
  }
  if (!set || set.gpus.length === 0) {
    throw new BerthError(
      EXIT.DATAERR,
      `service "${service}": replicas: gpus, but this job has no GPU (SLURM_STEP_GPUS, SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES are unset); ask Slurm for ` +
        `GPUs (sbatch --gres=gpu:N or --gpus=N) or give replicas: N`,
      { service },
    );
  }
  return { source: set.source, replicas: set.gpus.map((g, replica) => ({ replica, gpu: g.index, cudaVisibleDevices: g.visible })) };
}
