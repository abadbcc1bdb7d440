export { readSlurmEnv, type SlurmEnv } from './env.js';
export { badVariable, parseIndexList, parsePortRanges, parseTasksPerNode } from './env-values.js';
export { GPU_SOURCES, lowestGpu, readGpus, type Gpu, type GpuSet, type GpuSource } from './gpus.js';
export { compressHostlist, expandHostlist, MAX_HOSTS } from './hostlist.js';
export { resolveInstance, stepResvPorts, type InstanceMode, type ResolvedInstance } from './instance.js';
export { renderJobSummary, slurmJobReport, type JobReport, type JobWindow, type SlurmJobSummary } from './job-summary.js';
export { nodeAddresses, parseNodeAddrs, type NodeAddressOptions } from './nodes.js';
export { gpuReplicas, type GpuReplica, type GpuReplicaPlan } from './replicas.js';
