import type { PortRange } from '../host/host-map.js';
import { badVariable, parseIdText, parsePortRanges, parseTasksPerNode, parseUint } from './env-values.js';
import { readGpus, type GpuSet } from './gpus.js';
import { expandHostlist } from './hostlist.js';

/**
 * The Slurm environment of this process, read once into one value. Fields are absent when
 * Slurm did not set their variable (a batch script has no step id; only srun sets
 * SLURM_STEP_RESV_PORTS, and only with --resv-ports).
 */
export interface SlurmEnv {
  /** SLURM_JOB_ID (else SLURM_JOBID). */
  jobId: string;
  /** SLURM_STEP_ID (else SLURM_STEPID): set inside srun steps. */
  stepId?: string;
  /** SLURM_ARRAY_JOB_ID / SLURM_ARRAY_TASK_ID for job arrays. */
  arrayJobId?: string;
  arrayTaskId?: number;
  /** SLURM_NODEID: this node's index in the job's (step's) node list. */
  nodeId?: number;
  /** SLURM_LOCALID: this task's index among the step's tasks on this node. */
  localId?: number;
  /** SLURM_PROCID: this task's global rank. */
  procId?: number;
  /** SLURMD_NODENAME: the Slurm name of this node. */
  nodeName?: string;
  /** SLURM_JOB_NODELIST (else SLURM_NODELIST), expanded, in Slurm's order. */
  nodeList: string[];
  /** SLURM_STEP_NODELIST, expanded: the step's nodes (inside srun). */
  stepNodeList?: string[];
  /** SLURM_TASKS_PER_NODE expanded to one count per node ("2(x3),1" → [2,2,2,1]). */
  tasksPerNode?: number[];
  /** SLURM_SUBMIT_DIR */
  submitDir?: string;
  /** The GPUs, from SLURM_STEP_GPUS, SLURM_JOB_GPUS or CUDA_VISIBLE_DEVICES (see readGpus). */
  gpus?: GpuSet;
  /** SLURM_STEP_RESV_PORTS (srun --resv-ports), as ranges in Slurm's order. */
  resvPorts?: PortRange[];
}

/** The first of several names that is set (Slurm keeps old spellings such as SLURM_JOBID). */
function first(env: NodeJS.ProcessEnv, ...names: string[]): [string, string] | undefined {
  for (const n of names) {
    const v = env[n];
    if (v !== undefined) return [n, v];
  }
  return undefined;
}

/**
 * The Slurm environment, or undefined outside a Slurm job (no SLURM_JOB_ID). A bad value is a BerthError(65)
 * naming the variable, never guessed at: a guess could hand two jobs the same ports.
 */
export function readSlurmEnv(env: NodeJS.ProcessEnv = process.env): SlurmEnv | undefined {
  const job = first(env, 'SLURM_JOB_ID', 'SLURM_JOBID');
  if (job === undefined) return undefined;
  const nodes = first(env, 'SLURM_JOB_NODELIST', 'SLURM_NODELIST');
  const out: SlurmEnv = {
    jobId: parseIdText(job[0], job[1]),
    nodeList: nodes === undefined ? [] : expandNonEmpty(nodes[0], nodes[1]),
  };
  const step = first(env, 'SLURM_STEP_ID', 'SLURM_STEPID');
  if (step) out.stepId = parseIdText(step[0], step[1]);
  if (env.SLURM_ARRAY_JOB_ID !== undefined) out.arrayJobId = parseIdText('SLURM_ARRAY_JOB_ID', env.SLURM_ARRAY_JOB_ID);
  const uints = [['arrayTaskId', 'SLURM_ARRAY_TASK_ID'], ['nodeId', 'SLURM_NODEID'], ['localId', 'SLURM_LOCALID'], ['procId', 'SLURM_PROCID']] as const;
  for (const [k, name] of uints) if (env[name] !== undefined) out[k] = parseUint(name, env[name]);
  if (env.SLURMD_NODENAME !== undefined) {
    if (env.SLURMD_NODENAME.trim() === '') throw badVariable('SLURMD_NODENAME', env.SLURMD_NODENAME, 'is empty');
    out.nodeName = env.SLURMD_NODENAME.trim();
  }
  if (env.SLURM_STEP_NODELIST !== undefined) out.stepNodeList = expandNonEmpty('SLURM_STEP_NODELIST', env.SLURM_STEP_NODELIST);
  if (env.SLURM_TASKS_PER_NODE !== undefined) out.tasksPerNode = parseTasksPerNode('SLURM_TASKS_PER_NODE', env.SLURM_TASKS_PER_NODE);
  if (env.SLURM_SUBMIT_DIR !== undefined && env.SLURM_SUBMIT_DIR !== '') out.submitDir = env.SLURM_SUBMIT_DIR;
  const gpus = readGpus(env);
  if (gpus) out.gpus = gpus;
  if (env.SLURM_STEP_RESV_PORTS !== undefined) out.resvPorts = parsePortRanges('SLURM_STEP_RESV_PORTS', env.SLURM_STEP_RESV_PORTS);
  return out;
}

function expandNonEmpty(name: string, value: string): string[] {
  const hosts = expandHostlist(value, name);
  if (hosts.length === 0) throw badVariable(name, value, 'names no node');
  return hosts;
}
