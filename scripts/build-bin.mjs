// Builds the single executable: dist/bin/berth-linux-<arch>, Node's own binary with the whole
// CLI injected (Node single executable application), to copy onto machines without Node.
//
//   node scripts/build-bin.mjs [--mode snapshot|code-cache|plain] [--out FILE] [--if-stale]
//
// --if-stale does nothing when the binary is newer than every source it is made from.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

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

const { values: opt } = parseArgs({ options: { mode: { type: 'string', default: DEFAULT_MODE }, out: { type: 'string' }, 'if-stale': { type: 'boolean' } } });
if (!MODES.includes(opt.mode)) fail(`--mode ${opt.mode}: expected one of ${MODES.join(', ')}`);
if (process.platform !== 'linux') fail(`berth's single executable is built for Linux (this is ${process.platform})`);
const out = resolve(opt.out ?? fileURLToPath(new URL(`../dist/bin/berth-linux-${process.arch}`, import.meta.url)));
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
  for (const p of ['src', 'package.json', 'package-lock.json', 'scripts/build-bin.mjs', process.execPath]) walk(p);
  return newest;
}

if (opt['if-stale'] && existsSync(out) && statSync(out).mtimeMs >= newestSource()) process.exit(0);

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 20 || (major === 20 && minor < 6)) fail(`Node ${process.version} cannot build it: Node 20.6 or later is needed (single executable with snapshot and code cache)`);
const nodeBinary = readFileSync(process.execPath);
if (!nodeBinary.includes(`${FUSE}:0`)) {
  fail(`${process.execPath} cannot become a single executable (no unused ${FUSE}): use an official Node build, not one that already is a single executable`);
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
  copyFileSync(process.execPath, exe);
  chmodSync(exe, 0o755);
  // postject's ELF writer prints harmless warnings about section names: shown only on failure.
  const postject = spawnSync(process.execPath, ['node_modules/postject/dist/cli.js', exe, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', FUSE], { encoding: 'utf8' });
  if (postject.status !== 0 || !/Injection done/.test(postject.stdout)) fail(`postject failed (exit ${postject.status}):\n${postject.stdout}${postject.stderr}`);

  // The binary must run before it replaces the last good one.
  const expected = `berth ${/const VERSION = '([^']+)'/.exec(readFileSync('src/cli/main.ts', 'utf8'))?.[1]}`;
  const check = spawnSync(exe, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  if (check.status !== 0 || check.stdout.trim() !== expected || check.stderr !== '') {
    fail(`the built binary does not run: \`berth --version\` exited ${check.status}, printed ${JSON.stringify(check.stdout)} (expected "${expected}")${check.stderr ? `, stderr:\n${check.stderr}` : ''}`);
  }
  renameSync(exe, out);
  const n = needs(nodeBinary);
  const mb = (statSync(out).size / 2 ** 20).toFixed(1);
  process.stderr.write(
    `build-bin: ${out} (${mb} MiB, ${opt.mode}, node ${process.version}) in ${((Date.now() - t0) / 1000).toFixed(1)} s; ` +
      `needs Linux ${process.arch} with glibc >= ${n.glibc}${n.glibcxx ? ` and libstdc++ (GLIBCXX_${n.glibcxx})` : ''}; perl for --handoff fd\n`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
