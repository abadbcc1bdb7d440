import { BerthError, EXIT } from '../errors.js';
import { formatRange } from '../host/intervals.js';
import type { PortRange } from '../host/host-map.js';
import type { Band } from './layout-model.js';

/** How many whole instance windows fit in the band; a band without a window is one instance. */
export function instanceCount(band: Band): number {
  if (band.window === undefined) return 1;
  return Math.floor((band.hi - band.lo + 1) / band.window);
}

function describe(band: Band): string {
  const w = band.window === undefined ? 'no window' : `window ${band.window}`;
  return `band "${band.name}" (${formatRange(band)}, ${w})`;
}

/**
 * Ports of instance `instance` of a band: lo+i*window … lo+i*window+window-1, or the
 * whole band for instance 0 of a band without a window.
 */
export function instanceWindow(band: Band, instance: number): PortRange {
  if (!Number.isSafeInteger(instance) || instance < 0) {
    throw new BerthError(EXIT.USAGE, `${describe(band)}: instance must be a whole number ≥ 0, got ${instance}`, { band: band.name, instance });
  }
  if (band.window === undefined) {
    if (instance === 0) return { lo: band.lo, hi: band.hi };
    throw new BerthError(
      EXIT.USAGE,
      `${describe(band)}: only instance 0 (the whole band) exists, asked for instance ${instance}; add "window: N" to the band to cut it into per-instance ` +
        `windows`,
      { band: band.name, instance, instances: 1 },
    );
  }
  const count = instanceCount(band);
  if (instance >= count) {
    throw new BerthError(
      EXIT.USAGE,
      `${describe(band)}: instance ${instance} is outside the band, which fits ${count} instance${count === 1 ? '' : 's'} (0-${count - 1}); widen the range ` +
        `or use a smaller window`,
      { band: band.name, instance, instances: count },
    );
  }
  const lo = band.lo + instance * band.window;
  return { lo, hi: lo + band.window - 1 };
}
