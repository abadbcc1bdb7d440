/**
 * The Python wheels that carry berth (npm run build:wheel, scripts/build-wheel.mjs): the x64
 * wheel installed into a fresh venv and used as a Python user would, from a directory outside
 * the clone, on a PATH without node or npx: `berth`, `python -m berth`, `import berth`, and the
 * README's Python examples (the stack one twice: it must be re-runnable). The aarch64 wheel:
 * its tags and contents, pip's acceptance for an aarch64 machine, and its executable under
 * qemu-user. The pure client wheel: no executable, no entry point.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { requireNetns, runCollect, runInNetns, type RunResult } from './helpers/netns.js';
import { EMULATION_ENV, requireEmulation } from './helpers/qemu.js';
import { NEED, requireNeeds } from './helpers/require.js';

const ROOT = resolve(import.meta.dirname, '..');
/** Debian's interpreter, never a pyenv shim (house rule). */
const PY = '/usr/bin/python3';
const VERSION = /const VERSION = '([^']+)'/.exec(readFileSync(join(ROOT, 'src/cli/main.ts'), 'utf8'))![1]!;

const show = (r: RunResult) => `exit ${r.code} signal ${r.signal}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

function scratch(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'berth-wheel-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Builds wheels into dir/wheels; returns the one file whose name ends with `suffix`. */
function buildWheel(dir: string, args: string[], suffix: string): string {
  const out = join(dir, 'wheels');
  const b = spawnSync(process.execPath, [join(ROOT, 'scripts/build-wheel.mjs'), ...args, '--out-dir', out], { encoding: 'utf8', timeout: 600_000 });
  assert.equal(b.status, 0, `build-wheel ${args.join(' ')} failed:\n${b.stdout}${b.stderr}`);
  const whl = readdirSync(out).find((f) => f.endsWith(suffix));
  assert.ok(whl, `no *${suffix} in ${readdirSync(out).join(', ')}`);
  return join(out, whl);
}

/** A wheel's members and metadata, read by Python's zipfile. */
function inspectWheel(whl: string): { names: Record<string, number>; wheel: string; entryPoints: string; elfMachine: number | null } {
  const code = `import json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
info = [n for n in z.namelist() if n.endswith(".dist-info/WHEEL")][0]
eps = [n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt")]
exe = [n for n in z.namelist() if n == "berth/_bin/berth"]
head = z.open(exe[0]).read(20) if exe else b""
print(json.dumps({"names": {i.filename: (i.external_attr >> 16) & 0o777 for i in z.infolist()}, "wheel": z.read(info).decode(),
  "entryPoints": z.read(eps[0]).decode() if eps else "", "elfMachine": int.from_bytes(head[18:20], "little") if head else None}))`;
  const r = spawnSync(PY, ['-c', code, whl], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as ReturnType<typeof inspectWheel>;
}

/** The "From Python" section's runnable blocks of README.md (docs/examples.md marks them). */
function readmePython(): { lang: string; code: string; file?: string; output?: string }[] {
  const md = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = md.slice(md.indexOf('\n## From Python'), md.indexOf('\n## ', md.indexOf('\n## From Python') + 1));
  const blocks: { lang: string; code: string; file?: string; output?: string }[] = [];
  const re = /^```(python|yaml) runnable( file=(\S+))?\n([\s\S]*?)^```\n(?:\s*\n)?(?:```output\n([\s\S]*?)^```)?/gm;
  for (const m of section.matchAll(re)) blocks.push({ lang: m[1]!, code: m[4]!, ...(m[3] ? { file: m[3] } : {}), ...(m[5] !== undefined ? { output: m[5] } : {}) });
  return blocks;
}

/** Output lines match one for one; `…` stands for any text (as in doc-examples.test.ts). */
function outputMatches(expected: string, actual: string): boolean {
  const want = expected.trimEnd().split('\n');
  const got = actual.trimEnd().split('\n');
  return want.length === got.length && want.every((w, k) => new RegExp('^' + w.split('…').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*') + '$').test(got[k]!));
}

test('python wheel (x86_64): a fresh venv, no node or npx on PATH, outside the clone: berth, python -m berth, import berth and the README examples', { timeout: 900_000 }, async (t) => {
  if (!requireNetns(t) || !requireNeeds(t, NEED.setuptools, NEED.wheel, NEED.venv, NEED.pip)) return;
  const dir = scratch(t);
  const t0 = Date.now();
  const whl = buildWheel(dir, ['--arch', 'x64'], '-py3-none-manylinux_2_28_x86_64.whl');
  t.diagnostic(`built ${whl.split('/').pop()} (${(readFileSync(whl).length / 2 ** 20).toFixed(1)} MiB) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  const venv = join(dir, 'venv');
  const mk = spawnSync(PY, ['-m', 'venv', venv], { encoding: 'utf8' });
  assert.equal(mk.status, 0, mk.stderr);
  const pip = spawnSync(join(venv, 'bin/pip'), ['install', '--quiet', '--no-index', '--disable-pip-version-check', whl], { encoding: 'utf8', timeout: 300_000 });
  assert.equal(pip.status, 0, pip.stdout + pip.stderr);

  // PATH: the venv and a few tools (sh, perl for the fd handoff, env); no node, no npx.
  const tools = join(dir, 'tools');
  mkdirSync(tools);
  for (const tool of ['sh', 'perl', 'env']) symlinkSync(`/usr/bin/${tool}`, join(tools, tool));
  const work = join(dir, 'work');
  mkdirSync(work);
  // Nothing of the caller's environment but PATH for the namespace setup (unshare, ip), replaced inside.
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: dir, BERTH_STATE_DIR: join(dir, 'state'), NO_COLOR: '1', PYTHONDONTWRITEBYTECODE: '1' };
  const inWork = (argv: string[]) => runInNetns({}, ['/usr/bin/env', `PATH=${join(venv, 'bin')}:${tools}`, '/bin/sh', '-c', `cd '${work}' && exec "$@"`, 'sh', ...argv], { env, timeoutMs: 180_000 });

  const none = await inWork(['/bin/sh', '-c', 'for c in node npx berth; do command -v $c; done; exit 0']);
  assert.equal(none.stdout, `${join(venv, 'bin/berth')}\n`, 'no node or npx on PATH; berth is the venv\'s entry point');
  for (const argv of [['berth', '--version'], ['python', '-m', 'berth', '--version']]) {
    const r = await inWork(argv);
    assert.deepEqual([r.code, r.stdout, r.stderr], [0, `berth ${VERSION}\n`, ''], `${argv.join(' ')}: ${show(r)}`);
  }
  const found = await inWork(['python', '-c', 'import berth; print(berth.find_berth()[0]); print(berth.__file__)']);
  assert.equal(found.code, 0, show(found));
  const [exe, file] = found.stdout.trim().split('\n');
  assert.match(exe!, new RegExp(`^${venv}/lib/python3\\.\\d+/site-packages/berth/_bin/berth$`), 'import berth finds the bundled executable');
  assert.ok(file!.startsWith(venv), `berth imported from the venv, not the clone: ${file}`);
  const usage = await inWork(['berth', 'nope']);
  assert.equal(usage.code, 64, show(usage));

  const blocks = readmePython();
  assert.ok(blocks.filter((b) => b.lang === 'python').length >= 3, 'the README\'s Python examples were found');
  for (const b of blocks.filter((x) => x.lang === 'yaml')) writeFileSync(join(work, b.file!), b.code);
  const pyBlocks = blocks.filter((b) => b.lang === 'python');
  // The stack example twice: re-running it must not meet the previous run.
  const stackBlock = pyBlocks.find((b) => b.code.includes('berth.up('));
  assert.ok(stackBlock, 'the README has a berth.up() example');
  for (const [k, b] of [...pyBlocks, stackBlock].entries()) {
    writeFileSync(join(work, `example-${k}.py`), b.code);
    const r = await inWork(['python', `example-${k}.py`]);
    assert.equal(r.code, 0, `README Python example ${k}:\n${b.code}\n${show(r)}`);
    if (b.output !== undefined) assert.ok(outputMatches(b.output, r.stdout), `README Python example ${k}: output differs:\n--- expected\n${b.output}\n--- got\n${r.stdout}`);
  }
});

test('python wheel (aarch64): tags and contents, accepted by pip for an aarch64 machine, its berth runs under qemu', { timeout: 900_000 }, async (t) => {
  if (!requireEmulation(t) || !requireNeeds(t, NEED.setuptools, NEED.wheel, NEED.pip)) return;
  const dir = scratch(t);
  const t0 = Date.now();
  const whl = buildWheel(dir, ['--arch', 'arm64'], '.whl');
  t.diagnostic(`built ${whl.split('/').pop()} (${(readFileSync(whl).length / 2 ** 20).toFixed(1)} MiB) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  assert.equal(whl.split('/').pop(), `berth-${VERSION}-py3-none-manylinux_2_28_aarch64.whl`);
  const w = inspectWheel(whl);
  assert.match(w.wheel, /^Root-Is-Purelib: false$/m);
  assert.deepEqual(w.wheel.match(/^Tag: .*$/gm), ['Tag: py3-none-manylinux_2_28_aarch64']);
  assert.match(w.entryPoints, /^berth = berth:main$/m);
  const dist = `berth-${VERSION}.dist-info`;
  assert.deepEqual(Object.keys(w.names).sort(), ['berth/__init__.py', 'berth/__main__.py', 'berth/_bin/berth', 'berth/py.typed', ...['METADATA', 'RECORD', 'WHEEL', 'entry_points.txt', 'top_level.txt'].map((f) => `${dist}/${f}`)].sort());
  assert.equal(w.names['berth/_bin/berth'], 0o755, 'the executable keeps its mode in the wheel');
  assert.equal(w.elfMachine, 183, 'berth/_bin/berth is an aarch64 ELF (EM_AARCH64)');

  // pip installs it for an aarch64 machine (manylinux_2_28 tag), then it runs under qemu.
  const site = join(dir, 'site');
  const pip = spawnSync(PY, ['-m', 'pip', 'install', '--quiet', '--no-index', '--disable-pip-version-check', '--no-deps', '--only-binary=:all:', '--platform', 'manylinux_2_28_aarch64', '--target', site, whl], { encoding: 'utf8', timeout: 300_000 });
  assert.equal(pip.status, 0, pip.stdout + pip.stderr);
  const env = { ...process.env, ...EMULATION_ENV, PYTHONPATH: site, PYTHONDONTWRITEBYTECODE: '1' };
  delete env.BERTH;
  for (const argv of [[join(site, 'berth/_bin/berth'), '--version'], [PY, '-m', 'berth', '--version']]) {
    const r = await runCollect(argv, { env, timeoutMs: 180_000 });
    assert.deepEqual([r.code, r.stdout, r.stderr], [0, `berth ${VERSION}\n`, ''], `${argv.join(' ')}: ${show(r)}`);
  }
});

test('python wheel (pure): the client alone, for people who bring their own berth', { timeout: 300_000 }, (t) => {
  if (!requireNeeds(t, NEED.setuptools, NEED.wheel)) return;
  const dir = scratch(t);
  const whl = buildWheel(dir, ['--pure'], '.whl');
  assert.equal(whl.split('/').pop(), `berth-${VERSION}-py3-none-any.whl`);
  const w = inspectWheel(whl);
  assert.deepEqual(Object.keys(w.names).filter((n) => n.startsWith('berth/')).sort(), ['berth/__init__.py', 'berth/__main__.py', 'berth/py.typed']);
  assert.equal(w.entryPoints, '', 'no `berth` entry point: it would find itself on PATH');
  assert.match(w.wheel, /^Tag: py3-none-any$/m);
});
