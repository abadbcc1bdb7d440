import { BerthError, EXIT } from '../errors.js';
import type { PortSource } from '../allocate/types.js';
import { resolveInstance, stepResvPorts } from '../slurm/instance.js';
import type { ResolveSourceContext } from './options.js';

/*
 * The sources Slurm decides: an instance number from the job's task or GPUs, and the ports
 * srun reserved for the step. Slurm's misuse errors (64) are reported as the caller's misuse.
 */

export function resolveInstanceOption(value: number | string, env: NodeJS.ProcessEnv, flag: NonNullable<ResolveSourceContext['flag']>, usage: NonNullable<ResolveSourceContext['usage']>): number {
  if (value !== 'auto' && value !== 'gpu') {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw usage(`${flag('instance')} ${JSON.stringify(value)}: expected a whole number ≥ 0, auto or gpu`);
    return value;
  }
  try {
    return resolveInstance(value, env).instance;
  } catch (e) {
    // Missing variables are a misuse by the caller; bad values (65) name their variable as they are.
    if (e instanceof BerthError && e.exitCode === EXIT.USAGE) throw usage(e.message);
    throw e;
  }
}

/**
 * SLURM_STEP_RESV_PORTS as a range source. Slurm may hand out several runs (it wraps around
 * its port range and skips ports other steps hold); a range source is one run, so the
 * longest is used (the first of equals) — enough for the usual one port per task.
 */
export function resvSource(env: NodeJS.ProcessEnv, usage: NonNullable<ResolveSourceContext['usage']>): PortSource {
  let runs;
  try {
    runs = stepResvPorts(env);
  } catch (e) {
    if (e instanceof BerthError && e.exitCode === EXIT.USAGE) throw usage(e.message);
    throw e;
  }
  let best = runs[0]!;
  for (const r of runs) if (r.hi - r.lo > best.hi - best.lo) best = r;
  return { kind: 'range', range: { lo: best.lo, hi: best.hi } };
}
