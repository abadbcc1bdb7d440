import { spawn } from 'node:child_process';
import { nowMs } from './stats.js';

export interface Timed {
  ms: number;
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs argv to its end: wall ms from spawn() to 'close', exit code and output. */
export function timeSpawn(argv: string[], env: NodeJS.ProcessEnv): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const t0 = nowMs();
    const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ ms: nowMs() - t0, code, stdout, stderr }));
  });
}
