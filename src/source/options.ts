import type { BerthError } from '../errors.js';
import type { AllocateOptions, PortSource } from '../allocate/allocation-types.js';
import type { PortRange, HostSysctls } from '../host/host-map.js';

/**
 * SOURCE as `berth port` and `berth run` spell it (the README's Commands), for library callers: at most one of
 * `port`, `range`, `layout`/`band` (with `instance`), `source`. With none, the default band, as the CLI does.
 */
export interface SourceOptions {
  /** A resolved source, or 'resv': the ports of `srun --resv-ports` (SLURM_STEP_RESV_PORTS). */
  source?: PortSource | 'resv';
  /** `--port P`: exactly this port. */
  port?: number;
  /** `--range LO-HI`: any port of this inclusive range ('20000-20999' or {lo, hi}). */
  range?: PortRange | string;
  /** `--layout FILE`: a layout file; needs `band`. */
  layout?: string;
  /** `--band NAME`: a band of `layout`, or "default" (the built-in band) without one. */
  band?: string;
  /** `--instance N|auto|gpu`: one instance's window of the band (auto: BERTH_INSTANCE, else SLURM_LOCALID; gpu: the job's lowest GPU). */
  instance?: number | 'auto' | 'gpu';
}

/** Options of reserve(): `berth port`'s flags under their own names; without a source, the default band. */
export interface ReserveOptions extends Omit<AllocateOptions, 'source'>, SourceOptions {}

export interface ResolveSourceContext {
  /** Where the default band's sysctls are read (default '/proc'); or the sysctls themselves. */
  procRoot?: string;
  host?: HostSysctls;
  /** Slurm's variables for `instance: 'auto'|'gpu'` and `source: 'resv'` (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** How an option is named in messages: the CLI says `--port`, the library `port`. */
  flag?: (name: keyof SourceOptions) => string;
  /** The error for a misuse (the CLI adds its command and help hint). Default BerthError 64. */
  usage?: (message: string) => BerthError;
}

const SOURCE_KEYS = ['source', 'port', 'range', 'layout', 'band', 'instance'] as const;

/** Whether any SOURCE option is set (a portless launch must have none). */
export function hasSourceOptions(o: SourceOptions): boolean {
  return SOURCE_KEYS.some((k) => o[k] !== undefined);
}

/** Just the SOURCE options of a larger options object (to pass them on). */
export function pickSourceOptions(o: SourceOptions): SourceOptions {
  const out: SourceOptions = {};
  for (const k of SOURCE_KEYS) if (o[k] !== undefined) (out as Record<string, unknown>)[k] = o[k];
  return out;
}
