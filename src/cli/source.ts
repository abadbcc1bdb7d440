import type { PortSource } from '../allocate/allocation-types.js';
import type { HostSysctls } from '../host/host-map.js';
import type { SourceOptions } from '../source/options.js';
import { resolvePortSource } from '../source/resolve.js';
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

/** parseArgs option definitions for SOURCE (the README's Commands), shared by `port` and `run`. */
export const sourceOptions = {
  port: { type: 'string' },
  range: { type: 'string' },
  layout: { type: 'string' },
  band: { type: 'string' },
  instance: { type: 'string' },
  source: { type: 'string' },
  'allow-ephemeral': { type: 'boolean' },
} as const;

export type SourceValues = Partial<Record<'port' | 'range' | 'layout' | 'band' | 'instance' | 'source', string | boolean | (string | boolean)[]>>;

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * The SOURCE flags parsed; what they mean is the library's (source/resolve.ts), so reserve() and
 * launch() resolve them the same way. `env` is where Slurm's variables are read.
 */
export async function resolveSource(command: string, values: SourceValues, host: HostSysctls, env: NodeJS.ProcessEnv = process.env): Promise<PortSource> {
  const o: SourceOptions = {};
  const [port, range, layout, band, instance, source] = (['port', 'range', 'layout', 'band', 'instance', 'source'] as const).map((k) => str(values[k]));
  if (port !== undefined) o.port = parsePort(command, '--port', port);
  if (range !== undefined) o.range = parseRange(command, '--range', range);
  if (layout !== undefined) o.layout = layout;
  if (band !== undefined) o.band = band;
  if (source !== undefined) o.source = source as 'resv';
  if (instance !== undefined) {
    if (instance !== 'auto' && instance !== 'gpu' && !/^\d+$/.test(instance))
      throw usage(command, `--instance ${JSON.stringify(instance)}: expected a whole number ≥ 0, auto or gpu`);
    o.instance = instance === 'auto' || instance === 'gpu' ? instance : parseCount(command, '--instance', instance, 0);
  }
  return resolvePortSource(o, { host, env, flag: (n) => `--${n}`, usage: (m) => usage(command, m) });
}
