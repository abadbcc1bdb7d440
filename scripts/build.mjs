// Bundles the CLI and the library with esbuild so `npx berth` starts fast (no TS at run time),
// then type-checks and emits declarations with tsc (the bundle does no type checking).
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { chmodSync, rmSync } from 'node:fs';

const common = { bundle: true, platform: 'node', format: 'esm', target: 'node20', sourcemap: false, logLevel: 'warning' };
// Split per command (dynamic imports in src/cli/commands/index.ts): startup parses only
// the code the command needs. Chunks land in dist/cli/.
rmSync('dist/cli', { recursive: true, force: true });
await build({
  ...common,
  entryPoints: { berth: 'src/cli/main.ts' },
  outdir: 'dist',
  splitting: true,
  chunkNames: 'cli/[name]-[hash]',
  banner: { js: "#!/usr/bin/env node\nimport { createRequire as __berthRequire } from 'node:module'; const require = __berthRequire(import.meta.url);" },
});
chmodSync('dist/berth.js', 0o755);
await build({ ...common, entryPoints: ['src/index.ts'], outfile: 'dist/index.js', packages: 'external' });

// tsconfig.json type-checks everything (CLI included); tsconfig.build.json emits the library's declarations.
for (const project of ['tsconfig.json', 'tsconfig.build.json']) {
  const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', project], { stdio: 'inherit' });
  if (tsc.status !== 0) process.exit(tsc.status ?? 1);
}
