/**
 * Runs commands inside a network namespace made for the test (`unshare --net`), with
 * loopback up and the port sysctls set there only: the host's are never touched.
 * Outside CI, a machine without unshare/root skips such tests loudly; in CI they must run.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';

export interface NetnsSysctls {
  /** "LO HI" for ip_local_port_range */
  ephemeral?: string;
  /** "9000,9005-9010" for ip_local_reserved_ports */
  reserved?: string;
  unprivilegedStart?: number;
}

let cached: string | undefined | null = null;

/** undefined when namespaces work; otherwise why not. */
export function netnsUnavailable(): string | undefined {
  if (cached !== null) return cached;
  const r = spawnSync('unshare', ['--net', '--', 'sh', '-c', 'ip link set lo up && echo 9000 9100 > /proc/sys/net/ipv4/ip_local_port_range'], { encoding: 'utf8' });
  cached = r.status === 0 ? undefined : `unshare --net failed: ${(r.error?.message ?? r.stderr).trim() || `exit ${r.status}`}`;
  return cached;
}

/** Call at the top of a test that needs a namespace. Returns false when the test must skip. */
export function requireNetns(t: TestContext): boolean {
  const why = netnsUnavailable();
  if (why === undefined) return true;
  if (process.env.CI) throw new Error(`network namespace test cannot run in CI: ${why}`);
  process.stderr.write(`\n!!! SKIPPING network-namespace test "${t.name}": ${why}. In CI this is a failure.\n\n`);
  t.skip(`needs unshare --net as root: ${why}`);
  return false;
}

function setupScript(s: NetnsSysctls): string {
  const lines = ['set -e', 'ip link set lo up'];
  if (s.ephemeral) lines.push(`echo '${s.ephemeral}' > /proc/sys/net/ipv4/ip_local_port_range`);
  if (s.reserved !== undefined) lines.push(`echo '${s.reserved}' > /proc/sys/net/ipv4/ip_local_reserved_ports`);
  if (s.unprivilegedStart !== undefined) lines.push(`echo ${s.unprivilegedStart} > /proc/sys/net/ipv4/ip_unprivileged_port_start`);
  // berth port --ttl leaves holder processes (docs/leases.md) that would keep the namespace
  // and its leases for their ttl after the test: once the command is done, end those of
  // this namespace (only berth's holders, only here).
  lines.push(
    'NS=$(readlink /proc/self/ns/net); ME=$$',
    '( set +e; while kill -0 $ME 2>/dev/null; do sleep 0.2; done; for f in /proc/[0-9]*; do case "$(tr "\\0" " " < $f/cmdline 2>/dev/null)" in berth-lease-holder*) [ "$(readlink $f/ns/net 2>/dev/null)" = "$NS" ] && kill "${f#/proc/}" 2>/dev/null;; esac; done ) </dev/null >/dev/null 2>&1 &',
    'exec "$@"',
  );
  return lines.join('\n');
}

/** argv prefix that runs a command in a fresh namespace: [...netnsArgv(s), cmd, ...args]. */
export function netnsArgv(s: NetnsSysctls = {}): string[] {
  return ['unshare', '--net', '--', 'sh', '-c', setupScript(s), 'netns'];
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  input?: string;
}

/** Run argv to its end and collect its output (killed after timeoutMs, default 60 s). */
export function runCollect(argv: string[], opts: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

/** Run argv in a new namespace and collect its output. */
export function runInNetns(s: NetnsSysctls, argv: string[], opts: RunOptions = {}): Promise<RunResult> {
  return runCollect([...netnsArgv(s), ...argv], opts);
}

/** node running a TypeScript file through tsx (for scripts that import src/ directly). */
export function tsNode(file: string, ...args: string[]): string[] {
  return [process.execPath, '--import', 'tsx', file, ...args];
}
