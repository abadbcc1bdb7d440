// Builds the Python wheels that carry berth: dist/wheels/berth-<v>-py3-none-manylinux_<glibc>_<arch>.whl,
// the client (clients/python) with the single executable of that architecture inside
// (berth/_bin/berth), a `berth` console entry point that execs it, and `python -m berth`.
//
//   node scripts/build-wheel.mjs [--arch x64|arm64|all] [--pure] [--out-dir DIR]
//
// --arch: default this machine's; `all` builds both and the pure client wheel (py3-none-any,
// no executable: for people who bring their own berth); --pure builds that one alone.
// Offline, with Debian's python3, setuptools and wheel (python3-setuptools, python3-wheel).
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** Debian's interpreter (house rule: never a pyenv shim). */
const PY = '/usr/bin/python3';
/** Node's architecture names → the wheel platform tag's. */
const PY_ARCH = { x64: 'x86_64', arm64: 'aarch64' };

const { values: opt } = parseArgs({ options: { arch: { type: 'string', default: process.arch }, pure: { type: 'boolean' }, 'out-dir': { type: 'string' } } });
process.chdir(fileURLToPath(new URL('..', import.meta.url)));
const outDir = resolve(opt['out-dir'] ?? 'dist/wheels');
const arches = opt.pure ? [] : opt.arch === 'all' ? Object.keys(PY_ARCH) : [opt.arch];
for (const a of arches) if (!PY_ARCH[a]) fail(`--arch ${a}: expected one of ${Object.keys(PY_ARCH).join(', ')}, all`);

function fail(msg) {
  process.stderr.write(`build-wheel: ${msg}\n`);
  process.exit(1);
}

function run(argv, what, opts = {}) {
  const r = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8', ...opts });
  if (r.status !== 0) fail(`${what} failed (exit ${r.status ?? r.signal}):\n${r.stdout ?? ''}${r.stderr ?? ''}`);
  return r;
}

/** The manylinux tag a binary needs: its highest GLIBC_ symbol version (as build-bin.mjs reports it). */
function manylinux(bin, arch) {
  const text = readFileSync(bin).toString('latin1');
  const versions = [...new Set(text.match(/GLIBC_2\.\d+/g) ?? [])].map((v) => Number(v.slice('GLIBC_2.'.length)));
  if (versions.length === 0) fail(`${bin}: no GLIBC_ symbol versions found (not a glibc executable?)`);
  return `manylinux_2_${Math.max(...versions)}_${PY_ARCH[arch]}`;
}

// setup.py for the platform wheel: setuptools calls a package without extension modules pure
// (py3-none-any, purelib); this one holds a native executable, so it is a platform wheel
// (platlib) for any Python 3: py3-none-<manylinux tag>.
const SETUP_PY = `
import sys, tomllib
from setuptools import Distribution, setup
from wheel.bdist_wheel import bdist_wheel

PLAT = sys.argv.pop(1)
with open("meta.toml", "rb") as f:
    meta = tomllib.load(f)["project"]

class with_executable(Distribution):
    def has_ext_modules(self):
        return True

class platform_wheel(bdist_wheel):
    def get_tag(self):
        return ("py3", "none", PLAT)

setup(
    name=meta["name"],
    version=meta["version"],
    description=meta["description"] + " (this wheel carries the berth executable)",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license=meta["license"]["text"],
    python_requires=meta["requires-python"],
    classifiers=meta["classifiers"],
    packages=["berth"],
    package_data={"berth": ["py.typed", "_bin/berth"]},
    entry_points={"console_scripts": ["berth = berth:main"]},
    distclass=with_executable,
    cmdclass={"bdist_wheel": platform_wheel},
    zip_safe=False,
)
`;

/** A copy of the client without tests or build leftovers. */
function stage() {
  const dir = mkdtempSync(join(tmpdir(), 'berth-wheel-'));
  cpSync('clients/python', dir, { recursive: true, filter: (p) => !/\/(tests|build|__pycache__)(\/|$)|\.egg-info/.test(p.slice(resolve('clients/python').length)) });
  rmSync(join(dir, 'berth', '_bin'), { recursive: true, force: true });
  return dir;
}

function report(file, t0) {
  const size = statSync(file).size;
  const shown = size < 2 ** 20 ? `${(size / 1024).toFixed(0)} KiB` : `${(size / 2 ** 20).toFixed(1)} MiB`;
  process.stderr.write(`build-wheel: ${file} (${shown}) in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
}

mkdirSync(outDir, { recursive: true });
for (const arch of arches) {
  const t0 = Date.now();
  run([process.execPath, 'scripts/build-bin.mjs', '--arch', arch, '--if-stale'], `build-bin --arch ${arch}`, { stdio: ['ignore', 'inherit', 'inherit'] });
  const exe = resolve(`dist/bin/berth-linux-${arch}`);
  const plat = manylinux(exe, arch);
  const dir = stage();
  try {
    mkdirSync(join(dir, 'berth', '_bin'));
    copyFileSync(exe, join(dir, 'berth', '_bin', 'berth'));
    chmodSync(join(dir, 'berth', '_bin', 'berth'), 0o755);
    // The metadata stays in pyproject.toml's [project], read by setup.py under another name:
    // setuptools would otherwise take pyproject.toml over setup()'s arguments.
    copyFileSync(join(dir, 'pyproject.toml'), join(dir, 'meta.toml'));
    rmSync(join(dir, 'pyproject.toml'));
    writeFileSync(join(dir, 'setup.py'), SETUP_PY);
    run([PY, 'setup.py', plat, '-q', 'bdist_wheel', '-d', join(dir, 'out')], `setup.py bdist_wheel (${plat})`, { cwd: dir, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
    const [whl] = readdirSync(join(dir, 'out'));
    if (!whl?.endsWith(`-py3-none-${plat}.whl`)) fail(`unexpected wheel name ${whl} (wanted …-py3-none-${plat}.whl)`);
    copyFileSync(join(dir, 'out', whl), join(outDir, whl));
    report(join(outDir, whl), t0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (opt.pure || opt.arch === 'all') {
  const t0 = Date.now();
  const dir = stage();
  try {
    run([PY, '-m', 'pip', 'wheel', '--quiet', '--no-index', '--no-build-isolation', '--no-deps', '-w', join(dir, 'out'), dir], 'pip wheel (pure client)', { env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
    const [whl] = readdirSync(join(dir, 'out'));
    if (!whl?.endsWith('-py3-none-any.whl')) fail(`unexpected wheel name ${whl} (wanted …-py3-none-any.whl)`);
    copyFileSync(join(dir, 'out', whl), join(outDir, whl));
    report(join(outDir, whl), t0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
if (!existsSync(outDir)) fail(`${outDir} was not made`);
