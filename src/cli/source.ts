import type { PortSource } from '../allocate/types.js';
import type { HostSysctls } from '../host/types.js';
import { loadLayout } from '../layout/parse.js';
import { defaultLayout } from '../layout/default-layout.js';
import { instanceWindow } from '../layout/windows.js';
import { usage } from './command.js';
import { parseCount, parsePort, parseRange } from './values.js';

/** parseArgs option definitions for SOURCE (design.md §4), shared by `port` and `run`. */
export const sourceOptions = {
  port: { type: 'string' },
  range: { type: 'string' },
  layout: { type: 'string' },
  band: { type: 'string' },
  instance: { type: 'string' },
  'allow-ephemeral': { type: 'boolean' },
} as const;

export interface SourceValues {
  port?: string | boolean | (string | boolean)[];
  range?: string | boolean | (string | boolean)[];
  layout?: string | boolean | (string | boolean)[];
  band?: string | boolean | (string | boolean)[];
  instance?: string | boolean | (string | boolean)[];
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * One of --port P, --range LO-HI, --layout FILE --band NAME [--instance N]; with none,
 * the default band (largest span above the unprivileged start outside the ephemeral range).
 */
export function resolveSource(command: string, values: SourceValues, host: HostSysctls): PortSource {
  const port = str(values.port);
  const range = str(values.range);
  const layoutFile = str(values.layout);
  const band = str(values.band);
  const instanceText = str(values.instance);
  const given = [port !== undefined, range !== undefined, layoutFile !== undefined || band !== undefined].filter(Boolean).length;
  if (given > 1) throw usage(command, 'give one source: --port P, --range LO-HI, or --layout FILE --band NAME');
  if (instanceText !== undefined && band === undefined) throw usage(command, '--instance needs --band (and --layout FILE, unless the band is "default")');
  if (port !== undefined) return { kind: 'port', port: parsePort(command, '--port', port) };
  if (range !== undefined) return { kind: 'range', range: parseRange(command, '--range', range) };
  const instance = instanceText === undefined ? undefined : parseCount(command, '--instance', instanceText, 0);
  const layout = layoutFile !== undefined ? loadLayout(layoutFile) : defaultLayout(host);
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
