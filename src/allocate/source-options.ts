import { BerthError, EXIT } from '../errors.js';
import { readSysctls } from '../host/sysctl.js';
import type { HostSysctls, PortRange } from '../host/types.js';
import { DEFAULT_BAND, defaultLayout } from '../layout/default-layout.js';
import { instanceWindow } from '../layout/windows.js';
import { resolveInstance, stepResvPorts } from '../slurm/instance.js';
import type { PortSource, SourceOptions } from './types.js';

// SourceOptions is declared beside PortSource in types.ts (ReserveOptions extends it), so the two files no longer import each other; callers keep importing it from here.
export type { SourceOptions } from './types.js';

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

/** Whether any SOURCE option is set (a portless launch must have none). */
export function hasSourceOptions(o: SourceOptions): boolean {
  return o.source !== undefined || o.port !== undefined || o.range !== undefined || o.layout !== undefined || o.band !== undefined || o.instance !== undefined;
}

/** Just the SOURCE options of a larger options object (to pass them on). */
export function pickSourceOptions(o: SourceOptions): SourceOptions {
  const out: SourceOptions = {};
  for (const k of ['source', 'port', 'range', 'layout', 'band', 'instance'] as const) if (o[k] !== undefined) (out as Record<string, unknown>)[k] = o[k];
  return out;
}

function parseRangeText(text: string): PortRange | undefined {
  const m = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(text);
  return m ? { lo: Number(m[1]), hi: Number(m[2]) } : undefined;
}

/**
 * The PortSource the options name; the default band when they name none. Throws
 * BerthError 64 for a misuse (two sources, instance without band, an unknown band), 65
 * for a bad layout file.
 */
export async function resolvePortSource(o: SourceOptions, ctx: ResolveSourceContext = {}): Promise<PortSource> {
  const flag = ctx.flag ?? ((n) => n);
  const usage = ctx.usage ?? ((m) => new BerthError(EXIT.USAGE, m));
  const env = ctx.env ?? process.env;
  const named = typeof o.source === 'string' ? o.source : undefined;
  if (named !== undefined && named !== 'resv') throw usage(`${flag('source')} ${named}: the only named source is "resv" (the ports of 'srun --resv-ports')`);
  const given = [o.port !== undefined, o.range !== undefined, o.layout !== undefined || o.band !== undefined, o.source !== undefined].filter(Boolean).length;
  if (given > 1) throw usage(`give one source: ${flag('port')} P, ${flag('range')} LO-HI, ${flag('layout')} FILE ${flag('band')} NAME, or ${flag('source')} resv`);
  if (o.instance !== undefined && o.band === undefined) throw usage(`${flag('instance')} needs ${flag('band')} (and ${flag('layout')} FILE, unless the band is "default")`);
  if (o.source !== undefined && named === undefined) return o.source as PortSource;
  if (o.port !== undefined) return { kind: 'port', port: o.port };
  if (o.range !== undefined) {
    const range = typeof o.range === 'string' ? parseRangeText(o.range) : o.range;
    if (!range) throw usage(`${flag('range')} ${JSON.stringify(o.range)}: expected LO-HI, e.g. 20000-20999`);
    return { kind: 'range', range };
  }
  if (named === 'resv') return resvSource(env, usage);
  const instance = o.instance === undefined ? undefined : resolveInstanceOption(o.instance, env, flag, usage);
  // The YAML parser is loaded only when a layout file is named: most calls never need it.
  const layout = o.layout !== undefined ? (await import('../layout/parse.js')).loadLayout(o.layout) : defaultLayout(ctx.host ?? readSysctls(ctx.procRoot ?? '/proc'));
  const bandName = o.band ?? (o.layout === undefined ? DEFAULT_BAND : undefined);
  const bands = layout.bands.map((b) => b.name).join(', ');
  if (bandName === undefined) throw usage(`${flag('layout')} ${o.layout} needs ${flag('band')} NAME (one of: ${bands})`);
  const found = layout.bands.find((b) => b.name === bandName);
  if (!found) {
    if (o.layout === undefined && bandName === DEFAULT_BAND) {
      throw new BerthError(EXIT.UNAVAILABLE, 'no default band: every port above the unprivileged start is in the unreserved ephemeral range; run berth doctor for the sysctl line that frees some, or give a source');
    }
    throw usage(`band ${JSON.stringify(bandName)} is not in ${layout.source} (bands: ${bands})`);
  }
  // Without an instance the whole band is the source; windows matter only when instances are asked for.
  const win = instance === undefined ? { lo: found.lo, hi: found.hi } : instanceWindow(found, instance);
  const src: PortSource = { kind: 'band', band: found.name, range: win };
  if (o.layout !== undefined) src.layoutFile = o.layout;
  if (instance !== undefined) src.instance = instance;
  return src;
}

function resolveInstanceOption(value: number | string, env: NodeJS.ProcessEnv, flag: NonNullable<ResolveSourceContext['flag']>, usage: NonNullable<ResolveSourceContext['usage']>): number {
  if (value !== 'auto' && value !== 'gpu') {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw usage(`${flag('instance')} ${JSON.stringify(value)}: expected a whole number ≥ 0, auto or gpu`);
    return value;
  }
  try {
    return resolveInstance(value, env).instance;
  } catch (e) {
    // Missing variables are a misuse by the caller; bad values (65) name their variable as they are.
    if (e instanceof BerthError && e.exitCode === EXIT.USAGE) throw usage(e.message);
    throw e;
  }
}

/**
 * SLURM_STEP_RESV_PORTS as a range source. Slurm may hand out several runs (it wraps around
 * its port range and skips ports other steps hold); a range source is one run, so the
 * longest is used (the first of equals) — enough for the usual one port per task.
 */
function resvSource(env: NodeJS.ProcessEnv, usage: NonNullable<ResolveSourceContext['usage']>): PortSource {
  let runs;
  try {
    runs = stepResvPorts(env);
  } catch (e) {
    if (e instanceof BerthError && e.exitCode === EXIT.USAGE) throw usage(e.message);
    throw e;
  }
  let best = runs[0]!;
  for (const r of runs) if (r.hi - r.lo > best.hi - best.lo) best = r;
  return { kind: 'range', range: { lo: best.lo, hi: best.hi } };
}
