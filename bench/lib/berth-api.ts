/**
 * The slice of berth's library the benchmarks call. Children load it at run time from
 * dist/index.js (the published bundle) when that exports what they need, else from a
 * bundle of src/ made for this run, so a child never pays for tsx at startup.
 */
import type { Reservation } from '../../src/allocate/allocation-types.js';
import type { ReserveOptions } from '../../src/source/options.js';
import type { HostMap, SocketTable } from '../../src/host/host-map.js';

export interface BerthApi {
  reserve(opts: ReserveOptions): Promise<Reservation>;
  readHostMap(opts?: { procRoot?: string; owners?: boolean | ReadonlySet<number> }): HostMap;
  parseTcpTable(text: string, family: 4 | 6): SocketTable;
}

export type BerthName = keyof BerthApi;

/** Import the library file chosen by the harness (an absolute path). */
export async function loadBerth(path: string): Promise<BerthApi> {
  const { pathToFileURL } = await import('node:url');
  return (await import(pathToFileURL(path).href)) as BerthApi;
}
