import type { PortSource } from '../allocate/types.js';
import type { HostSysctls } from '../host/types.js';
import { defaultLayout } from '../layout/default-layout.js';
import { instanceWindow } from '../layout/windows.js';
import { BerthError, EXIT } from '../errors.js';
import { resolveInstance, stepResvPorts } from '../slurm/instance.js';
import { usage } from './command.js';
import { parseCount, parsePort, parseRange } from './values.js';

/** The SOURCE paragraph of `port` and `run` --help. */
export const SOURCE_HELP = `SOURCE (one of; default: the built-in "default" band, see 'berth doctor'):
  --port P                     exactly this port (busy: exit 69 naming the holder)
  --range LO-HI                any port of this inclusive range
  --layout FILE --band NAME [--instance N|auto|gpu]
                               a band of a layout file, or one instance's window of it:
                               auto = $BERTH_INSTANCE, else $SLURM_LOCALID;
                               gpu = the window of the job's lowest GPU index
  --source resv                the ports Slurm reserved for this step (srun --resv-ports)`;

/** parseArgs option definitions for SOURCE (design.md §4), shared by `port` and `run`. */
export const sourceOptions = {
  port: { type: 'string' },
  range: { type: 'string' },
  layout: { type: 'string' },
  band: { type: 'string' },
  instance: { type: 'string' },
  source: { type: 'string' },
  'allow-ephemeral': { type: 'boolean' },
} as const;

export interface SourceValues {
  port?: string | boolean | (string | boolean)[];
  range?: string | boolean | (string | boolean)[];
  layout?: string | boolean | (string | boolean)[];
  band?: string | boolean | (string | boolean)[];
  instance?: string | boolean | (string | boolean)[];
  source?: string | boolean | (string | boolean)[];
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * One of --port P, --range LO-HI, --layout FILE --band NAME [--instance N|auto|gpu], or
 * --source resv (the ports srun reserved for this step); with none, the default band
 * (largest span above the unprivileged start outside the ephemeral range).
 * `env` is where Slurm's variables are read (tests pass their own).
 */
export async function resolveSource(command: string, values: SourceValues, host: HostSysctls, env: NodeJS.ProcessEnv = process.env): Promise<PortSource> {
  const port = str(values.port);
  const range = str(values.range);
  const layoutFile = str(values.layout);
  const band = str(values.band);
  const instanceText = str(values.instance);
  const sourceText = str(values.source);
  if (sourceText !== undefined && sourceText !== 'resv') throw usage(command, `--source ${sourceText}: the only named source is "resv" (the ports of 'srun --resv-ports')`);
  const given = [port !== undefined, range !== undefined, layoutFile !== undefined || band !== undefined, sourceText !== undefined].filter(Boolean).length;
  if (given > 1) throw usage(command, 'give one source: --port P, --range LO-HI, --layout FILE --band NAME, or --source resv');
  if (instanceText !== undefined && band === undefined) throw usage(command, '--instance needs --band (and --layout FILE, unless the band is "default")');
  if (port !== undefined) return { kind: 'port', port: parsePort(command, '--port', port) };
  if (range !== undefined) return { kind: 'range', range: parseRange(command, '--range', range) };
  if (sourceText !== undefined) return resvSource(command, env);
  const instance = instanceText === undefined ? undefined : parseInstance(command, instanceText, env);
  // The YAML parser is loaded only when a layout file is named: most calls never need it.
  const layout = layoutFile !== undefined ? (await import('../layout/parse.js')).loadLayout(layoutFile) : defaultLayout(host);
  const bandName = band ?? (layoutFile === undefined ? 'default' : undefined);
  if (bandName === undefined) throw usage(command, `--layout ${layoutFile} needs --band NAME (one of: ${layout.bands.map((b) => b.name).join(', ')})`);
  const found = layout.bands.find((b) => b.name === bandName);
  if (!found) throw usage(command, `band ${JSON.stringify(bandName)} is not in ${layout.source} (bands: ${layout.bands.map((b) => b.name).join(', ')})`);
  // Without --instance the whole band is the source; windows matter only when instances are asked for.
  const win = instance === undefined ? { lo: found.lo, hi: found.hi } : instanceWindow(found, instance);
  const src: PortSource = { kind: 'band', band: found.name, range: win };
  if (layoutFile !== undefined) src.layoutFile = layoutFile;
  if (instance !== undefined) src.instance = instance;
  return src;
}

/** --instance N, auto (BERTH_INSTANCE, else SLURM_LOCALID) or gpu (lowest GPU index of the job). */
function parseInstance(command: string, text: string, env: NodeJS.ProcessEnv): number {
  if (text !== 'auto' && text !== 'gpu') {
    if (!/^\d+$/.test(text)) throw usage(command, `--instance ${JSON.stringify(text)}: expected a whole number ≥ 0, auto or gpu`);
    return parseCount(command, '--instance', text, 0);
  }
  try {
    return resolveInstance(text, env).instance;
  } catch (e) {
    // Missing variables are a usage problem of this command; bad values (65) name their variable as they are.
    if (e instanceof BerthError && e.exitCode === EXIT.USAGE) throw usage(command, e.message);
    throw e;
  }
}

/**
 * SLURM_STEP_RESV_PORTS as a range source. Slurm may hand out several runs (it wraps around
 * its port range and skips ports other steps hold); a range source is one run, so the
 * longest is used (the first of equals) — enough for the usual one port per task.
 */
function resvSource(command: string, env: NodeJS.ProcessEnv): PortSource {
  let runs;
  try {
    runs = stepResvPorts(env);
  } catch (e) {
    if (e instanceof BerthError && e.exitCode === EXIT.USAGE) throw usage(command, e.message);
    throw e;
  }
  let best = runs[0]!;
  for (const r of runs) if (r.hi - r.lo > best.hi - best.lo) best = r;
  return { kind: 'range', range: { lo: best.lo, hi: best.hi } };
}
