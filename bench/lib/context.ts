/**
 * What every benchmark gets from the harness: the repo root, a private scratch directory,
 * progress logging, bundled child scripts, and the berth library to load in children.
 */
import { build } from 'esbuild';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BerthName } from './berth-api.js';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

// Bundles run as ESM; CommonJS dependencies (portfinder) still call require() for builtins.
const requireBanner = "import { createRequire as __benchRequire } from 'node:module'; const require = __benchRequire(import.meta.url);";

/** Child scripts (bench/*.ts run in other processes), by file name without extension. */
export const CHILD_SCRIPTS = ['alloc-rate-child', 'socket-table-child', 'socket-holder-child', 'dup-coordinator', 'dup-child', 'scale-up-child', 'scale-alloc-child', 'multinode-coordinator', 'multinode-srun', 'busy-host-child'] as const;
export type ChildScript = (typeof CHILD_SCRIPTS)[number];

/** Where each src module that a BerthApi name comes from lives, for the fallback bundle. */
const SRC_OF: Record<BerthName, string> = {
  reserve: 'src/source/reserve.ts',
  readHostMap: 'src/host/read-host.ts',
  parseTcpTable: 'src/host/socket-table.ts',
};

export class BenchContext {
  readonly repoRoot = repoRoot;
  readonly tmp: string;
  private children: Promise<Record<ChildScript, string>> | undefined;
  private libs = new Map<string, Promise<{ path: string; from: string }>>();

  constructor(readonly quick: boolean) {
    this.tmp = mkdtempSync(join(tmpdir(), 'berth-bench-'));
  }

  log(msg: string): void {
    process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
  }

  /** A fresh private directory (0700, like berth's own state directory) under the scratch dir. */
  privateDir(prefix: string): string {
    return mkdtempSync(join(this.tmp, `${prefix}-`));
  }

  /** Bundled child scripts (one esbuild run, shared chunks), absolute paths by name. */
  childScripts(): Promise<Record<ChildScript, string>> {
    this.children ??= (async () => {
      const outdir = join(this.tmp, 'children');
      await build({
        entryPoints: CHILD_SCRIPTS.map((n) => join(repoRoot, 'bench', `${n}.ts`)),
        outdir,
        bundle: true,
        splitting: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        outExtension: { '.js': '.mjs' },
        banner: { js: requireBanner },
        logLevel: 'warning',
      });
      return Object.fromEntries(CHILD_SCRIPTS.map((n) => [n, join(outdir, `${n}.mjs`)])) as Record<ChildScript, string>;
    })();
    return this.children;
  }

  /**
   * Path of a module exporting `names`: dist/index.js when it exports them all (what users
   * get), else a bundle of the src/ modules made now. `from` says which, for the report.
   */
  berthLib(names: readonly BerthName[]): Promise<{ path: string; from: string }> {
    const key = [...names].sort().join(',');
    let p = this.libs.get(key);
    if (!p) {
      p = this.resolveLib(names, key);
      this.libs.set(key, p);
    }
    return p;
  }

  private async resolveLib(names: readonly BerthName[], key: string): Promise<{ path: string; from: string }> {
    const dist = join(repoRoot, 'dist', 'index.js');
    if (existsSync(dist)) {
      try {
        const mod = (await import(pathToFileURL(dist).href)) as Record<string, unknown>;
        if (names.every((n) => typeof mod[n] === 'function')) return { path: dist, from: 'dist/index.js' };
      } catch (e) {
        this.log(`dist/index.js does not load (${(e as Error).message}); bundling src/ instead`);
      }
    }
    const missing = names.filter((n) => !existsSync(join(repoRoot, SRC_OF[n])));
    if (missing.length > 0) throw new Error(`berth does not provide ${missing.map((n) => `${n} (${SRC_OF[n]})`).join(', ')} yet`);
    const outfile = join(this.tmp, `berth-lib-${key.replace(/,/g, '-')}.mjs`);
    await build({
      stdin: {
        contents: names.map((n) => `export { ${n} } from './${SRC_OF[n]}';`).join('\n'),
        resolveDir: repoRoot,
        loader: 'ts',
        sourcefile: 'bench-berth-lib.ts',
      },
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      banner: { js: requireBanner },
      logLevel: 'warning',
    });
    return { path: outfile, from: `src/ (bundled for the run: ${names.map((n) => SRC_OF[n]).join(', ')})` };
  }

  cleanup(): void {
    rmSync(this.tmp, { recursive: true, force: true });
  }
}
