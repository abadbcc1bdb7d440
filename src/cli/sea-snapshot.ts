/*
 * Entry of the single executable built with a V8 startup snapshot (scripts/build-bin.mjs --mode
 * snapshot): taken after this file ran, so every command is already evaluated; main.ts (which runs
 * at once) is evaluated at run time. It relies on src/ modules reading env, argv, pid, clocks and
 * the terminal only when called, never while being evaluated.
 */
import { startupSnapshot } from 'node:v8';
import { commands } from './commands/index.js';

for (const c of commands) void c.load();
startupSnapshot.setDeserializeMainFunction(() => {
  void import('./main.js');
});
