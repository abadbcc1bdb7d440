/**
 * Tests that run a real program (Debian's servers, chromium, curl, …) check for it first.
 * Outside CI a missing program skips the test with one loud line naming the Debian package
 * to install; in CI (CI=true; .ci/run installs them all) it is a failure, so nothing is
 * skipped there by accident. Programs are looked up on PATH and Python modules are imported
 * by Debian's /usr/bin/python3 with this process's environment, so a PATH without a program
 * or a PYTHONPATH that shadows a module shows exactly what a machine without them does.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { TestContext } from 'node:test';

export const PYTHON = '/usr/bin/python3';

/** A program on PATH, or a module Debian's python3 must import; `pkg` is the Debian package that brings it. */
export type Need = { program: string; pkg: string } | { python: string; pkg: string };

/** The usual needs by name, with their Debian packages (the names .ci/run installs). */
export const NEED = {
  python3: { program: 'python3', pkg: 'python3' },
  curl: { program: 'curl', pkg: 'curl' },
  perl: { program: 'perl', pkg: 'perl-base' },
  gunicorn: { python: 'gunicorn', pkg: 'gunicorn' },
  uvicorn: { python: 'uvicorn', pkg: 'python3-uvicorn' },
  hypercorn: { python: 'hypercorn', pkg: 'python3-hypercorn' },
  pythonSystemd: { python: 'systemd.daemon', pkg: 'python3-systemd' },
  torch: { python: 'torch', pkg: 'python3-torch' },
  pip: { python: 'pip', pkg: 'python3-pip' },
  setuptools: { python: 'setuptools', pkg: 'python3-setuptools' },
  wheel: { python: 'wheel', pkg: 'python3-wheel' },
  venv: { python: 'ensurepip', pkg: 'python3-venv' },
  redisServer: { program: 'redis-server', pkg: 'redis-server' },
  redisCli: { program: 'redis-cli', pkg: 'redis-tools' },
  nginx: { program: 'nginx', pkg: 'nginx' },
  haproxy: { program: 'haproxy', pkg: 'haproxy' },
  etcd: { program: 'etcd', pkg: 'etcd-server' },
  etcdctl: { program: 'etcdctl', pkg: 'etcd-client' },
  chromium: { program: 'chromium', pkg: 'chromium' },
  caddy: { program: 'caddy', pkg: 'caddy' },
  distributed: { python: 'distributed', pkg: 'python3-distributed' },
  daskScheduler: { program: 'dask-scheduler', pkg: 'python3-distributed' },
} as const satisfies Record<string, Need>;

/** The executable `name` on PATH (of `env`), or undefined. */
export function findProgram(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const p = join(dir, name);
    try {
      if (!statSync(p).isFile()) continue;
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

const pyCache = new Map<string, boolean>();

function pythonHas(module: string, env: NodeJS.ProcessEnv): boolean {
  const key = `${env.PYTHONPATH ?? ''}\0${module}`;
  let ok = pyCache.get(key);
  if (ok === undefined) {
    const r = spawnSync(PYTHON, ['-c', `import ${module}`], { env, stdio: 'ignore' });
    ok = r.status === 0;
    pyCache.set(key, ok);
  }
  return ok;
}

function describe(n: Need): string {
  return 'program' in n ? `${n.program} (not on PATH)` : `the Python module ${n.python} (not importable by ${PYTHON})`;
}

/** The needs that this machine does not meet, each as "what (why)". */
export function missingNeeds(needs: readonly Need[], env: NodeJS.ProcessEnv = process.env): Need[] {
  const pythonMissing = findProgram('python3', env) === undefined && !isExecutable(PYTHON);
  return needs.filter((n) => ('program' in n ? findProgram(n.program, env) === undefined : pythonMissing || !pythonHas(n.python, env)));
}

function isExecutable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** One line: what is missing and the apt-get command that brings it. */
export function missingText(missing: readonly Need[]): string {
  const pkgs = [...new Set(missing.map((n) => n.pkg))];
  return `needs ${missing.map(describe).join(', ')}: apt-get install ${pkgs.join(' ')}`;
}

/**
 * Call first in a test that runs these programs. Returns false when the test must skip
 * (outside CI, with one loud line); throws in CI.
 */
export function requireNeeds(t: TestContext, ...needs: Need[]): boolean {
  const missing = missingNeeds(needs);
  if (missing.length === 0) return true;
  const why = missingText(missing);
  if (process.env.CI) throw new Error(`test "${t.name}" cannot run in CI: it ${why} (.ci/run installs it)`);
  process.stderr.write(`\n!!! SKIPPING "${t.name}": it ${why}. In CI this is a failure.\n\n`);
  t.skip(why);
  return false;
}

/**
 * For `test(name, { skip: skipUnless(…) }, fn)` and describe(): false when every need is met,
 * else the reason (printed loudly once, outside CI); throws in CI.
 */
export function skipUnless(what: string, ...needs: Need[]): false | string {
  const missing = missingNeeds(needs);
  if (missing.length === 0) return false;
  const why = missingText(missing);
  if (process.env.CI) throw new Error(`${what} cannot run in CI: it ${why} (.ci/run installs it)`);
  process.stderr.write(`\n!!! SKIPPING ${what}: it ${why}. In CI this is a failure.\n\n`);
  return why;
}
