import { BerthError, EXIT } from '../errors.js';
import type { PortSource } from '../allocate/types.js';
import { readSysctls } from '../host/sysctl.js';
import type { HostSysctls } from '../host/types.js';
import { DEFAULT_BAND, defaultLayout } from '../layout/default-layout.js';
import { bandSource } from './band-source.js';
import { requireDefaultBand } from './default-band.js';
import type { ResolveSourceContext, SourceOptions } from './options.js';
import { parseRangeText } from './range-text.js';
import { resolveInstanceOption, resvSource } from './slurm-source.js';

/**
 * The PortSource the options name; the default band when they name none. Throws
 * BerthError 64 for a misuse (two sources, instance without band, an unknown band), 65
 * for a bad layout file.
 */
export async function resolvePortSource(o: SourceOptions, ctx: ResolveSourceContext = {}): Promise<PortSource> {
  const flag = ctx.flag ?? ((n) => n);
  const usage = ctx.usage ?? ((m) => new BerthError(EXIT.USAGE, m));
  const env = ctx.env ?? process.env;
  let sysctls: HostSysctls | undefined;
  const host = (): HostSysctls => (sysctls ??= ctx.host ?? readSysctls(ctx.procRoot ?? '/proc'));
  // No source but the built-in band, on a host that has none: 69 with the ranges and the fix, before any misuse is looked for.
  if (o.port === undefined && o.range === undefined && o.source === undefined && o.layout === undefined && (o.band ?? DEFAULT_BAND) === DEFAULT_BAND) {
    requireDefaultBand(host(), `a source: ${flag('port')} P, ${flag('range')} LO-HI or ${flag('layout')} FILE ${flag('band')} NAME`);
  }
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
  const layout = o.layout !== undefined ? (await import('../layout/parse.js')).loadLayout(o.layout) : defaultLayout(host());
  const bandName = o.band ?? (o.layout === undefined ? DEFAULT_BAND : undefined);
  const bands = layout.bands.map((b) => b.name).join(', ');
  if (bandName === undefined) throw usage(`${flag('layout')} ${o.layout} needs ${flag('band')} NAME (one of: ${bands})`);
  const found = layout.bands.find((b) => b.name === bandName);
  if (!found) throw usage(`band ${JSON.stringify(bandName)} is not in ${layout.source} (bands: ${bands})`);
  // Without an instance the whole band is the source; windows matter only when instances are asked for.
  return bandSource(found, instance, o.layout);
}
