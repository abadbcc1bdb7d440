/** Runs the built CLI (dist/berth.cjs, the package bin, built by `npm test` before the tests) as a user would. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { netnsArgv, runCollect, type NetnsSysctls, type RunResult } from './netns.js';

export const BERTH = resolve('dist/berth.cjs');

/** A fresh private lease directory, so tests never see each other's (or the user's) leases. */
export function tempStateDir(): string {
  return mkdtempSync(join(tmpdir(), 'berth-test-state-'));
}

export interface BerthRun {
  env?: NodeJS.ProcessEnv;
  /** Run inside a new network namespace with these sysctls. */
  netns?: NetnsSysctls;
  timeoutMs?: number;
}

export function berth(args: string[], opts: BerthRun = {}): Promise<RunResult> {
  const argv = [...(opts.netns ? netnsArgv(opts.netns) : []), process.execPath, BERTH, ...args];
  return runCollect(argv, { env: { ...process.env, NO_COLOR: '1', ...opts.env }, timeoutMs: opts.timeoutMs ?? 30_000 });
}
