import type { PortRange } from '../host/host-map.js';

/** "LO-HI" (spaces allowed around each number) as a range; undefined when it is not that shape. Bounds are the caller's to check. */
export function parseRangeText(text: string): PortRange | undefined {
  const m = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(text);
  return m ? { lo: Number(m[1]), hi: Number(m[2]) } : undefined;
}
