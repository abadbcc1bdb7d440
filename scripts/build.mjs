// Bundles the CLI and the library with esbuild so `npx berth` starts fast (no TS at run time),
// then type-checks and emits declarations with tsc (the bundle does no type checking).
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { chmodSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

/*
 * The CLI is built for startup time: `berth port` runs once per port, often in a loop, and
 * most of its time beyond Node's own start is loading code (docs/benchmarks.md §2).
 *
 * - dist/berth.cjs (package.json "bin"): main.ts and the command table only, CommonJS
 *   (an ES module entry costs ~3 ms more to start). dist/berth.js is a one-line ES shim
 *   for those who run `node dist/berth.js`.
 * - dist/cli/<command>.cjs: one bundle per command with everything it needs, loaded only
 *   when that command runs. One esbuild run over all commands with code splitting made
 *   `berth port` load twelve small chunks, and every module costs a resolve, a read and
 *   a link.
 * - The command bundles are CommonJS, required by berth.js: an ES module is read
 *   asynchronously, linked and evaluated in separate steps, and that costs `berth port`
 *   about 2 ms more than require() of the same code. The command table's
 *   import('./port.js') becomes require('./cli/port.cjs') (esbuild lowers import() when
 *   told the target lacks it).
 * - npm packages (yaml) stay external and are required where used. The layout parser
 *   behind --layout (src/layout/parse.ts, with the YAML reader: ~45 KB of the 180 KB `port`
 *   bundle, 41% of the start-up profile was loading port.cjs) is its own bundle,
 *   dist/cli/lazy/<name>.cjs, required on first use: a module imported with import() is
 *   never in a command bundle (LAZY below; the import() is lowered to a require). A module
 *   imported both ways is copied into both, so lazy modules must hold no state shared
 *   with the rest.
 * - Each command bundle has V8's code cache beside it (<name>.cjs.cache, made here by this
 *   node after the bundle's top level ran), loaded by src/cli/bundle-loader.ts instead of a
 *   plain require(): 0.97× of `berth port`'s CPU (issue 31, docs/scale.md §2). A Node.js other
 *   than the one that built rejects the cache and compiles the source as before.
 * - Not minified: esbuild's whitespace and syntax minification did not change the CPU time
 *   of loading port.cjs (20.7 ms either way, 31 runs each, issue 23), and internal-error
 *   stack traces keep readable lines.
 *
 * Rules this puts on CLI code: no top-level await and no import.meta in src/ modules a
 * command imports (the build fails on both), and each bundle has its own copy of shared
 * modules, so classes are not shared between berth.js and a command bundle (main.ts
 * recognizes a BerthError by its shape, not instanceof).
 */
const common = { bundle: true, platform: 'node', target: 'node20', sourcemap: false, logLevel: 'warning' };

const COMMANDS_INDEX = resolve('src/cli/commands/index.ts');
const commands = new Set();
const commandBundles = {
  name: 'command-bundles',
  setup(b) {
    b.onResolve({ filter: /^\.\/[a-z][a-z0-9-]*\.js$/ }, (args) => {
      if (args.kind !== 'dynamic-import' || resolve(args.importer) !== COMMANDS_INDEX) return undefined;
      const name = basename(args.path, '.js');
      commands.add(name);
      return { path: name, namespace: 'command-bundle' };
    });
    // The import() becomes loadBundle(name): the bundle with its code cache (src/cli/bundle-loader.ts).
    b.onLoad({ filter: /.*/, namespace: 'command-bundle' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(resolve('src/cli/bundle-loader.ts'))}).loadBundle(${JSON.stringify(args.path)});`,
      resolveDir: resolve('src/cli'),
      loader: 'js',
    }));
  },
};

/*
 * V8's code cache of a command bundle, written beside it as <bundle>.cache: the bundle compiled
 * and its top level run (what loading it runs: no command) by this node, in a child of its own.
 * Made by the node that builds; another Node.js rejects it and compiles the source instead.
 */
const CACHE_MAKER = `const { readFileSync, writeFileSync, renameSync } = require('node:fs');
const { createRequire, wrap } = require('node:module');
const { dirname } = require('node:path');
const { Script } = require('node:vm');
const [file, out] = process.argv.slice(1);
const script = new Script(wrap(readFileSync(file, 'utf8')), { filename: file });
const mod = { exports: {} };
script.runInThisContext().call(mod.exports, mod.exports, createRequire(file), mod, file, dirname(file));
writeFileSync(out + '.tmp', script.createCachedData());
renameSync(out + '.tmp', out);`;

function makeCodeCache(file) {
  const r = spawnSync(process.execPath, ['-e', CACHE_MAKER, file, `${file}.cache`], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  if (r.status !== 0) throw new Error(`code cache of ${file}: ${r.stderr.trim()}`);
}

/* Modules imported with import() by command code, each built as dist/cli/lazy/<name>.cjs. */
const LAZY = { [resolve('src/layout/parse.ts')]: 'layout-parse' };
const lazyBundles = {
  name: 'lazy-bundles',
  setup(b) {
    b.onResolve({ filter: /\.js$/ }, (args) => {
      if (args.kind !== 'dynamic-import') return undefined;
      const name = LAZY[resolve(args.resolveDir, args.path.replace(/\.js$/, '.ts'))];
      if (name === undefined) throw new Error(`${args.importer}: import('${args.path}') names no bundle in scripts/build.mjs LAZY`);
      return { path: `./lazy/${name}.cjs`, external: true };
    });
  },
};

// Built aside, then swapped in whole: others run dist/berth.js while this builds.
const tmp = `dist/.cli-build-${process.pid}`;
rmSync(tmp, { recursive: true, force: true });
try {
  await build({
    ...common,
    format: 'cjs',
    entryPoints: ['src/cli/main.ts'],
    outfile: join(tmp, 'berth.cjs'),
    banner: { js: '#!/usr/bin/env node' },
    supported: { 'dynamic-import': false },
    plugins: [commandBundles],
  });
  if (commands.size === 0) throw new Error(`no command imports found in ${COMMANDS_INDEX}`);
  await Promise.all(
    [...commands].map((name) =>
      build({
        ...common,
        format: 'cjs',
        entryPoints: [join(dirname(COMMANDS_INDEX), `${name}.ts`)],
        outfile: join(tmp, 'cli', `${name}.cjs`),
        packages: 'external',
        logOverride: { 'empty-import-meta': 'error' },
        supported: { 'dynamic-import': false },
        plugins: [lazyBundles],
      }),
    ),
    ...Object.entries(LAZY).map(([entry, name]) =>
      build({
        ...common,
        format: 'cjs',
        entryPoints: [entry],
        outfile: join(tmp, 'cli', 'lazy', `${name}.cjs`),
        packages: 'external',
        logOverride: { 'empty-import-meta': 'error' },
      }),
    ),
  );
  for (const name of commands) makeCodeCache(resolve(tmp, 'cli', `${name}.cjs`));
  // The watchdog that stops a dead berth's services (src/launch/watchdog/): started with
  // the first service of `run`/`up`, so nothing of it is loaded by `berth port`.
  await build({ ...common, format: 'cjs', entryPoints: ['src/cli/watchdog-entry.ts'], outfile: join(tmp, 'watchdog.cjs'), packages: 'external' });
  chmodSync(join(tmp, 'berth.cjs'), 0o755);
  writeFileSync(join(tmp, 'berth.js'), "#!/usr/bin/env node\nimport './berth.cjs';\n", { mode: 0o755 });
  // A concurrent build may put its dist/cli back between our rm and rename: retry.
  for (let attempt = 0; ; attempt++) {
    rmSync('dist/cli', { recursive: true, force: true });
    try {
      renameSync(join(tmp, 'cli'), 'dist/cli');
      break;
    } catch (e) {
      if (attempt >= 5 || (e.code !== 'ENOTEMPTY' && e.code !== 'EEXIST')) throw e;
    }
  }
  renameSync(join(tmp, 'watchdog.cjs'), 'dist/watchdog.cjs');
  renameSync(join(tmp, 'berth.cjs'), 'dist/berth.cjs');
  renameSync(join(tmp, 'berth.js'), 'dist/berth.js');
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

// The library finds dist/watchdog.cjs through __dirname, as the CommonJS bundles do.
const esmDirname = [
  "import { dirname as __berthDirname } from 'node:path';",
  "import { fileURLToPath as __berthFileURLToPath } from 'node:url';",
  'const __dirname = __berthDirname(__berthFileURLToPath(import.meta.url));',
].join(' ');
await build({ ...common, format: 'esm', entryPoints: ['src/index.ts'], outfile: 'dist/index.js', packages: 'external', banner: { js: esmDirname } });

// tsconfig.json type-checks everything (CLI included); tsconfig.build.json emits the library's declarations.
for (const project of ['tsconfig.json', 'tsconfig.build.json']) {
  const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', project], { stdio: 'inherit' });
  if (tsc.status !== 0) process.exit(tsc.status ?? 1);
}
