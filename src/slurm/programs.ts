import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { BerthError, EXIT } from '../errors.js';

/*
 * A multi-node stack needs srun (the agents) and scontrol (node addresses). Without them (outside an allocation,
 * a node without Slurm's client tools) that is a usage error (64) saying so, not a "spawn ENOENT".
 */

/** The usage error for a Slurm command that is not on PATH; `why` says what berth needs it for. */
export function slurmProgramMissing(name: 'srun' | 'scontrol', why: string): BerthError {
  return new BerthError(
    EXIT.USAGE,
    `Slurm's ${name} is not on PATH (berth needs it ${why}): run berth inside a Slurm allocation, on a node where Slurm's commands are on PATH`,
    { program: name },
  );
}

/** True when PATH (of `env`) has an executable file `name`. */
export function onPath(name: string, env: NodeJS.ProcessEnv = process.env): boolean {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const p = join(dir, name);
    try {
      if (!statSync(p).isFile()) continue;
      accessSync(p, constants.X_OK);
      return true;
    } catch {
      // not here
    }
  }
  return false;
}

/** Throws slurmProgramMissing unless `name` is on PATH. */
export function requireSlurmProgram(name: 'srun' | 'scontrol', why: string, env: NodeJS.ProcessEnv = process.env): void {
  if (!onPath(name, env)) throw slurmProgramMissing(name, why);
}
