/** Runs the built CLI (dist/berth.js, built by `npm test` before the tests) as a user would. */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { netnsArgv, type NetnsSysctls, type RunResult } from './netns.js';

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
  return new Promise((resolvePromise, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { env: { ...process.env, NO_COLOR: '1', ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr });
    });
  });
}
