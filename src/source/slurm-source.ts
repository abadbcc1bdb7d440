import { BerthError, EXIT } from '../errors.js';
import type { PortRange } from '../host/host-map.js';
import { resolveInstance, stepResvPorts } from '../slurm/instance.js';

/** What Slurm decides of a source: an instance number, or the ports srun reserved for the step. */
export type SlurmDecides = { instance: number } | { resv: PortRange } | undefined;

/**
 * `instance: auto|gpu` from the job's task or GPUs, or with `resv` SLURM_STEP_RESV_PORTS as
 * one range. Slurm may hand out several runs (it wraps around its port range and skips ports
 * other steps hold); a range source is one run, so the longest is used (the first of equals),
 * enough for the usual one port per task. Missing variables are a misuse by the caller
 * (`usage`); bad values (65) name their variable as they are.
 */
export function slurmDecides(instance: 'auto' | 'gpu' | undefined, resv: boolean, env: NodeJS.ProcessEnv, usage: (m: string) => BerthError): SlurmDecides {
  try {
    if (instance !== undefined) return { instance: resolveInstance(instance, env).instance };
    if (!resv) return undefined;
    const runs = stepResvPorts(env);
    let best = runs[0]!;
    for (const r of runs) if (r.hi - r.lo > best.hi - best.lo) best = r;
    return { resv: { lo: best.lo, hi: best.hi } };
  } catch (e) {
    if (e instanceof BerthError && e.exitCode === EXIT.USAGE) throw usage(e.message);
    throw e;
  }
}
