/**
 * The file lease store as it was before leases became the network namespace's abstract
 * socket names (issue 19), for paired measurements in the same run: the last commit with
 * it is extracted from git into the bench's scratch directory and built there (its own
 * scripts/build.mjs, this checkout's node_modules). Nothing of it is kept in src/.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchContext } from './context.js';

/** The last commit of main with the file store (src/allocate/lease-store.ts). */
export const FILE_STORE_COMMIT = '365a2c37bbce9f8f76a7d4fdb4e3142e53dc7fab';

let built: string | undefined | null = null;

/** Root of the built baseline tree (dist/berth.cjs, dist/index.js, src/), or undefined with the reason logged. */
export function fileStoreBaseline(ctx: BenchContext): string | undefined {
  if (built !== null) return built;
  const dir = join(ctx.tmp, 'file-store-baseline');
  try {
    mkdirSync(dir, { recursive: true });
    const tar = execFileSync('git', ['-C', ctx.repoRoot, 'archive', FILE_STORE_COMMIT], { maxBuffer: 1 << 30 });
    execFileSync('tar', ['-x', '-C', dir], { input: tar });
    if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(ctx.repoRoot, 'node_modules'), join(dir, 'node_modules'));
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: dir, stdio: 'ignore' });
    built = dir;
  } catch (e) {
    ctx.log(`file-store baseline unavailable (commit ${FILE_STORE_COMMIT.slice(0, 12)} not in this clone?): ${(e as Error).message.split('\n')[0]}`);
    built = undefined;
  }
  return built;
}
