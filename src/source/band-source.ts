import type { PortSource } from '../allocate/types.js';
import { instanceWindow } from '../layout/windows.js';
import type { Band } from '../layout/types.js';

/** A band as a source: the whole band, or the window of one instance of it. */
export function bandSource(band: Band, instance?: number, layoutFile?: string): PortSource {
  const src: PortSource = { kind: 'band', band: band.name, range: instance === undefined ? { lo: band.lo, hi: band.hi } : instanceWindow(band, instance) };
  if (layoutFile !== undefined) src.layoutFile = layoutFile;
  if (instance !== undefined) src.instance = instance;
  return src;
}
