import { pollRunDir, readCoordinatorFile, readNodeFile } from './node-files.js';
import type { ServiceSpec } from '../file/spec.js';
import type { SharedPorts } from '../record/result.js';
import { onNode, reachAt } from './plan.js';

/*
 * Shared ports (`NAME: shared`) are leased by the agent of the service's first node, which
 * publishes them in its node file; agents on its other nodes wait for them here.
 */

export class SharedWait {
  /** Service → the node its rank 0 runs on, for services whose rank 0 is elsewhere. */
  readonly elsewhere = new Map<string, string>();

  constructor(
    services: readonly ServiceSpec[],
    nodes: readonly string[],
    index: number,
    private readonly runDir: string,
    /** Only a node file of this generation counts: an earlier generation's names its old ports. */
    private readonly generation = 0,
  ) {
    for (const s of services) {
      if (s.shared.length === 0 || s.nodes === undefined) continue;
      const first = nodes.findIndex((_, i) => onNode(s.nodes!, i, nodes.length));
      if (first >= 0 && first !== index) this.elsewhere.set(s.name, nodes[first]!);
    }
  }

  needed(): boolean {
    return this.elsewhere.size > 0;
  }

  /** Every such service's shared ports, once their nodes have published them (undefined if `stopped` first). */
  async wait(stopped: () => boolean, generation = this.generation): Promise<Map<string, SharedPorts> | undefined> {
    const out = new Map<string, SharedPorts>();
    const all = await pollRunDir(() => {
      const coord = readCoordinatorFile(this.runDir);
      for (const [service, node] of this.elsewhere) {
        if (out.has(service) || !coord) continue;
        const file = readNodeFile(this.runDir, node);
        const got = (file?.generation ?? 0) === generation ? file?.shared?.[service] : undefined;
        if (got) out.set(service, { host: reachAt(got.host, node, new Map(Object.entries(coord.addresses))), ports: got.ports });
      }
      return out.size === this.elsewhere.size;
    }, stopped);
    return all ? out : undefined;
  }
}
