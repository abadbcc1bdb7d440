/**
 * Real podman containers for the PID-namespace tests, with no image and no registry: the
 * container's root is this host's own / as an overlay (`--rootfs /:O`, writes stay in the
 * container), so it runs this host's node and this clone's dist/berth.cjs at the same paths.
 * Debian's podman as it runs here: `--runtime runc --cgroup-manager=cgroupfs`, and
 * `--network host`, which is the network namespace podman itself runs in: the tests start
 * podman inside a namespace of their own (runInNetns), so the leases stay there.
 * Outside CI a machine without a working podman skips loudly; in CI (.ci/run installs
 * podman and runc) that is a failure.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { TestContext } from 'node:test';

const GLOBAL = ['--runtime', 'runc', '--cgroup-manager=cgroupfs'];

/** Our hard limit for `name` in /proc/self/limits ("Max open files"), or undefined if unlimited. */
function hardLimit(name: string): number | undefined {
  const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith(name));
  const hard = line?.slice(26).trim().split(/\s+/)[1];
  return hard && /^\d+$/.test(hard) ? Number(hard) : undefined;
}

/**
 * Podman asks runc for rlimits above this machine's (nofile 1048576), and runc without
 * CAP_SYS_RESOURCE gets EPERM ("error setting rlimit type 7"); here even the host's own
 * nproc hard limit was refused. Lowering is always allowed, so ask for little.
 */
function ulimits(): string[] {
  const cap = (name: string, want: number) => Math.min(want, hardLimit(name) ?? want);
  const nofile = cap('Max open files', 4096);
  const nproc = cap('Max processes', 4096);
  return ['--ulimit', `nofile=${nofile}:${nofile}`, '--ulimit', `nproc=${nproc}:${nproc}`];
}

/**
 * argv that runs `cmd…` in a fresh container (new PID namespace, the caller's network
 * namespace); `shared` folders are bind-mounted at the same path, `label` marks the
 * container for cleanup (removePodmanContainers).
 */
export function podmanRunArgv(opts: { shared?: string[]; env?: Record<string, string>; label: string }): string[] {
  const argv = ['podman', ...GLOBAL, 'run', '--rm', '--network', 'host', '--label', `berth-test=${opts.label}`, ...ulimits()];
  for (const d of opts.shared ?? []) argv.push('-v', `${d}:${d}`);
  for (const [k, v] of Object.entries(opts.env ?? {})) argv.push('-e', `${k}=${v}`);
  // Options must come before the rootfs: with --rootfs the first operand is the root, not an image.
  // `--rootfs /` (no overlay) fails: runc cannot mount sysfs over the live /sys (EBUSY).
  argv.push('--rootfs', '/:O');
  return argv;
}

/** Removes what a test's containers left (a test killed at its timeout leaves conmon's). */
export function removePodmanContainers(label: string): void {
  const ids = spawnSync('podman', [...GLOBAL, 'ps', '-aq', '--filter', `label=berth-test=${label}`], { encoding: 'utf8' }).stdout?.trim();
  if (ids) spawnSync('podman', [...GLOBAL, 'rm', '-f', ...ids.split(/\s+/)], { stdio: 'ignore' });
}

let cached: string | undefined | null = null;

/** undefined when a container starts here; otherwise why not (the error podman gave). */
export function podmanUnavailable(): string | undefined {
  if (cached !== null) return cached;
  if (process.getuid?.() !== 0) return (cached = 'the podman tests run rootful podman (not root here)');
  const r = spawnSync(podmanRunArgv({ label: 'probe' })[0]!, [...podmanRunArgv({ label: 'probe' }).slice(1), '/bin/true'], { encoding: 'utf8', timeout: 120_000 });
  if (r.error) cached = `podman: ${r.error.message} (Debian: apt-get install podman runc)`;
  else cached = r.status === 0 ? undefined : `podman run --rootfs /:O /bin/true failed (exit ${r.status}): ${r.stderr.trim().split('\n').slice(-3).join(' ')}`;
  return cached;
}

/** Call first in a podman test. Returns false when the test must skip. */
export function requirePodman(t: TestContext): boolean {
  const why = podmanUnavailable();
  if (why === undefined) return true;
  if (process.env.CI) throw new Error(`podman test cannot run in CI: ${why}`);
  process.stderr.write(`\n!!! SKIPPING podman test "${t.name}": ${why}. In CI this is a failure.\n\n`);
  t.skip(`needs podman: ${why}`);
  return false;
}
