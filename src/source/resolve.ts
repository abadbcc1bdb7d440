import { BerthError, EXIT } from '../errors.js';
import type { PortSource } from '../allocate/allocation-types.js';
import type { PortRange } from '../host/host-map.js';
import { readSysctls } from '../host/sysctl.js';
import { builtInLayout } from '../layout/default-band.js';
import { DEFAULT_BAND } from '../layout/default-layout.js';
import type { Band } from '../layout/layout-model.js';
import { instanceWindow } from '../layout/windows.js';
import { resolveInstance, stepResvPorts } from '../slurm/instance.js';
import type { ResolveSourceContext, SourceOptions } from './options.js';
import { parseRangeText } from './range-text.js';

/**
 * The PortSource the options name; the default band when they name none (69 with the ranges
 * and the fix on a host that has none). Throws BerthError 64 for a misuse (two sources,
 * instance without band, an unknown band), 65 for a bad layout file.
 */
export async function resolvePortSource(o: SourceOptions, ctx: ResolveSourceContext = {}): Promise<PortSource> {
  const flag = ctx.flag ?? ((n) => n);
  const usage = ctx.usage ?? ((m) => new BerthError(EXIT.USAGE, m));
  const portFlags = `${flag('port')} P, ${flag('range')} LO-HI`;
  const bandFlags = `${flag('layout')} FILE ${flag('band')} NAME`;
  const named = typeof o.source === 'string' ? o.source : undefined;
  if (named !== undefined && named !== 'resv') throw usage(`${flag('source')} ${named}: the only named source is "resv" (the ports of 'srun --resv-ports')`);
  const given = [o.port !== undefined, o.range !== undefined, o.layout !== undefined || o.band !== undefined, o.source !== undefined].filter(Boolean).length;
  if (given > 1) throw usage(`give one source: ${portFlags}, ${bandFlags}, or ${flag('source')} resv`);
  if (o.instance !== undefined && o.band === undefined) {
    throw usage(`${flag('instance')} needs ${flag('band')} (and ${flag('layout')} FILE, unless the band is "default")`);
  }
  const numbered = o.instance !== 'auto' && o.instance !== 'gpu';
  if (numbered && o.instance !== undefined && (typeof o.instance !== 'number' || !Number.isSafeInteger(o.instance) || o.instance < 0)) {
    throw usage(`${flag('instance')} ${JSON.stringify(o.instance)}: expected a whole number ≥ 0, auto or gpu`);
  }
  if (o.source !== undefined && named === undefined) return o.source as PortSource;
  if (o.port !== undefined) return { kind: 'port', port: o.port };
  if (o.range !== undefined) {
    const range = typeof o.range === 'string' ? parseRangeText(o.range) : o.range;
    if (!range) throw usage(`${flag('range')} ${JSON.stringify(o.range)}: expected LO-HI, e.g. 20000-20999`);
    return { kind: 'range', range };
  }
  const slurm = slurmDecides(numbered ? undefined : (o.instance as 'auto' | 'gpu'), named === 'resv', ctx.env ?? process.env, usage);
  if (slurm && 'resv' in slurm) return { kind: 'range', range: slurm.resv };
  const instance = slurm ? slurm.instance : (o.instance as number | undefined);
  const bandName = o.band ?? DEFAULT_BAND;
  // The YAML parser is loaded only when a layout file is named: most calls never need it.
  const layout = o.layout !== undefined
    ? (await import('../layout/parse.js')).loadLayout(o.layout)
    : builtInLayout(ctx.host ?? readSysctls(ctx.procRoot ?? '/proc'), bandName, `a source: ${portFlags} or ${bandFlags}`);
  const bands = layout.bands.map((b) => b.name).join(', ');
  if (o.band === undefined && o.layout !== undefined) throw usage(`${flag('layout')} ${o.layout} needs ${flag('band')} NAME (one of: ${bands})`);
  const found = layout.bands.find((b) => b.name === bandName);
  if (!found) throw usage(`band ${JSON.stringify(bandName)} is not in ${layout.source} (bands: ${bands})`);
  // Without an instance the whole band is the source; windows matter only when instances are asked for.
  return bandSource(found, instance, o.layout);
}

/** A band as a source: the whole band, or the window of one instance of it. */
export function bandSource(band: Band, instance?: number, layoutFile?: string): PortSource {
  const src: PortSource = { kind: 'band', band: band.name, range: instance === undefined ? { lo: band.lo, hi: band.hi } : instanceWindow(band, instance) };
  if (layoutFile !== undefined) src.layoutFile = layoutFile;
  if (instance !== undefined) src.instance = instance;
  return src;
}

type SlurmDecides = { instance: number } | { resv: PortRange } | undefined;

/**
 * What Slurm decides of a source: `instance: auto|gpu` from the job's task or GPUs, or with `resv` the longest run
 * (the first of equals) of SLURM_STEP_RESV_PORTS: Slurm may hand out several (it wraps around its port range and skips
 * ports other steps hold), a range source is one, and one is enough for the usual one port per task. Missing variables
 * are the caller's misuse (`usage`); bad values (65) name their variable as they are.
 */
function slurmDecides(instance: 'auto' | 'gpu' | undefined, resv: boolean, env: NodeJS.ProcessEnv, usage: (m: string) => BerthError): SlurmDecides {
  try {
    if (instance !== undefined) return { instance: resolveInstance(instance, env).instance };
    if (!resv) return undefined;
    const runs = stepResvPorts(env);
    const best = runs.reduce((a, r) => (r.hi - r.lo > a.hi - a.lo ? r : a), runs[0]!);
    return { resv: { lo: best.lo, hi: best.hi } };
  } catch (e) {
    if (e instanceof BerthError && e.exitCode === EXIT.USAGE) throw usage(e.message);
    throw e;
  }
}
