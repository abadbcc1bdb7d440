import { execSizeProblem } from '../../launch/preflight.js';
import type { StackSpec } from '../file/spec.js';

/*
 * A command that exec would refuse as too long (E2BIG: one word over 128 KiB, or words and
 * environment over a quarter of the stack limit) is refused before the run directory is
 * made and any port is leased, as `berth run` refuses it, instead of failing its replica
 * once the stack is half started. Words and `env:` values are measured as written;
 * placeholders that grow later ({x.urls}, spreads) are the launch's own check, at the
 * replica's start (also 64).
 */

/** `file:line: service "x": cannot start …` for each service whose command cannot be exec'd. */
export function execSizeProblems(spec: StackSpec, env: NodeJS.ProcessEnv, limitsText: string | undefined): string[] {
  const out: string[] = [];
  for (const s of spec.services) {
    const problem = execSizeProblem(s.command, { ...env, ...s.env }, limitsText);
    if (problem !== undefined) out.push(`${spec.file}:${s.line}: service "${s.name}": ${problem}`);
  }
  return out;
}
