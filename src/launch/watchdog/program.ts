import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { isSingleExecutable } from '../../util/self.js';

/*
 * Where the watchdog's program is: dist/watchdog.cjs, next to the bundle that runs (the CLI's
 * command bundles in dist/cli/, the library's dist/index.js), or the single executable itself
 * (`up --watchdog`). Code run from the TypeScript sources (tsx) has no bundle next to it and
 * runs without a watchdog unless useWatchdogEntry() names one.
 */

let entryOverride: string | null | undefined;

/** Tests running from sources: the built watchdog to use (null: none). */
export function useWatchdogEntry(path: string | null): void {
  entryOverride = path;
}

/** How to start the watchdog, undefined when there is none to start. */
export function watchdogArgv(): string[] | undefined {
  const pid = String(process.pid);
  if (entryOverride !== undefined) return entryOverride === null ? undefined : [process.execPath, entryOverride, pid];
  // The single executable has no files next to it: it is its own watchdog (util/self.ts).
  if (isSingleExecutable()) return [process.execPath, 'up', '--watchdog', pid];
  if (typeof __dirname !== 'string') return undefined;
  for (const dir of [__dirname, join(__dirname, '..')]) {
    const p = join(dir, 'watchdog.cjs');
    if (existsSync(p)) return [process.execPath, p, pid];
  }
  return undefined;
}
