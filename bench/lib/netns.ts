/**
 * Runs a bundled child script inside a fresh network namespace (unshare --net, loopback
 * up), so benchmarks see only their own sockets and never touch the host's ports.
 */
import { spawn } from 'node:child_process';
import { netnsArgv, netnsUnavailable, type NetnsSysctls } from '../../test/helpers/netns.js';

export { netnsArgv, netnsUnavailable };

export interface NetnsRunOptions {
  /** Raise the soft open-file limit to the hard one first (sh's ulimit: node cannot). */
  maxFiles?: boolean;
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
  /** Port sysctls of the namespace (ephemeral range, reserved ports). */
  sysctls?: NetnsSysctls;
}

/**
 * `node script JSON(config)` in a new namespace; the child's stderr is passed through as
 * progress and the last line of its stdout is its JSON result.
 */
export function runChildInNetns<T>(script: string, config: unknown, opts: NetnsRunOptions = {}): Promise<T> {
  const prefix = opts.maxFiles ? ['sh', '-c', 'ulimit -n "$(ulimit -Hn)" && exec "$@"', 'bench'] : [];
  const argv = [...netnsArgv(opts.sysctls ?? {}), ...prefix, process.execPath, script, JSON.stringify(config)];
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 300_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const last = stdout.trim().split('\n').pop() ?? '';
      if (code !== 0) {
        reject(new Error(`${script} in a network namespace ended with ${signal ?? `exit ${code}`}${last ? `: ${last.slice(0, 500)}` : ''}`));
        return;
      }
      try {
        resolve(JSON.parse(last) as T);
      } catch {
        reject(new Error(`${script} printed no JSON result (last line: ${last.slice(0, 200) || 'none'})`));
      }
    });
  });
}
