/*
 * How berth starts another berth (agents, helpers: a CLI command, never a script file): node + the
 * script, or the single executable (Node's SEA) alone, with no script beside it and maybe no node.
 */
import { createRequire } from 'node:module';

let sea: boolean | undefined;

/** True inside the single executable. node:sea exists from Node 20.12 on; older nodes cannot be one. */
export function isSingleExecutable(): boolean {
  if (sea === undefined) {
    try {
      // Loaded on demand: `berth port` never pays for it. createRequire, not import(): the
      // CLI is CommonJS and the single executable cannot import() at all.
      const req = typeof require === 'function' ? require : createRequire(process.cwd() + '/');
      sea = (req('node:sea') as { isSea(): boolean }).isSea();
    } catch {
      sea = false;
    }
  }
  return sea;
}

/** The argv that runs this berth again; append a command and its options. */
export function selfArgv(): string[] {
  if (isSingleExecutable()) return [process.execPath];
  const script = process.argv[1];
  if (script === undefined) throw new Error('berth cannot find its own script (process.argv[1] is empty)');
  return [process.execPath, script];
}
