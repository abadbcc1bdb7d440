/*
 * slurm/: what Slurm tells a job step, read and parsed: its environment (SLURM_* values, hostlists,
 * tasks per node), its GPUs, its nodes' addresses, the instance (a window) a task takes, the
 * replicas of `replicas: gpus`, the reservation's ports, and the job summary `berth doctor`
 * prints; and the words of Slurm's own commands berth runs (the agents' srun argv, whether
 * srun and scontrol are on PATH, scontrol's node addresses in nodes.ts).
 * May import: src/layout (the job summary's windows), src/host (types), src/errors; nothing else of src.
 */
export { readSlurmEnv, type SlurmEnv } from './env.js';
export { badVariable, parseIndexList, parsePortRanges, parseTasksPerNode } from './env-values.js';
export { GPU_SOURCES, lowestGpu, readGpus, type Gpu, type GpuSet, type GpuSource } from './gpus.js';
export { compressHostlist, expandHostlist, MAX_HOSTS } from './hostlist.js';
export { resolveInstance, stepResvPorts, type InstanceMode, type ResolvedInstance } from './instance.js';
export { renderJobSummary, slurmJobReport, type JobReport, type JobWindow, type SlurmJobSummary } from './job-summary.js';
export { nodeAddresses, parseNodeAddrs, type NodeAddressOptions } from './nodes.js';
export { gpuReplicas, type GpuReplica, type GpuReplicaPlan } from './replicas.js';
