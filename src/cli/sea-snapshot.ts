/*
 * Entry of the single executable when it is built with a V8 startup snapshot
 * (scripts/build-bin.mjs --mode snapshot). The snapshot is taken at build time after this
 * file ran: every command's code is then already compiled and evaluated, and starting the
 * binary only deserializes it. The CLI itself (main.ts, which reads argv and runs at once
 * when evaluated) is evaluated at run time, in the deserialize main function.
 *
 * Snapshot rules this relies on: src/ modules read process.env, argv, pid, clocks and the
 * terminal only when called, never while being evaluated.
 */
import { startupSnapshot } from 'node:v8';
import { commands } from './commands/index.js';

for (const c of commands) void c.load();
startupSnapshot.setDeserializeMainFunction(() => {
  void import('./main.js');
});
