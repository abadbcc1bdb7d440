import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { isSingleExecutable } from '../../util/self.js';

/*
 * Where the watchdog's program is: dist/watchdog.cjs next to the running bundle (dist/cli/, dist/index.js), or the
 * single executable itself (`up --watchdog`, util/self.ts: it has no files next to it). Run from the TypeScript
 * sources (tsx) there is none unless useWatchdogEntry() names one.
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
  if (isSingleExecutable()) return [process.execPath, 'up', '--watchdog', pid];
  if (typeof __dirname !== 'string') return undefined;
  for (const dir of [__dirname, join(__dirname, '..')]) {
    const p = join(dir, 'watchdog.cjs');
    if (existsSync(p)) return [process.execPath, p, pid];
  }
  return undefined;
}
