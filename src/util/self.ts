/*
 * How berth starts another berth: agents of a multi-node stack (srun … berth up --agent),
 * and any helper process berth runs of itself (a helper must be a command of the CLI, not a
 * script file: the single executable has no files next to it). There are two ways berth runs:
 *   - as a script under node (`npx berth`, `node dist/berth.cjs`): node + the script;
 *   - as the single executable (dist/bin/berth-linux-<arch>, Node's SEA): the executable
 *     alone; there is no script next to it and maybe no node on the machine.
 * Every self-invocation goes through selfArgv() so both work the same.
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
