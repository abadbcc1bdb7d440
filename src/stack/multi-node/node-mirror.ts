import type { NodeFile } from './node-files.js';
import type { ReplicaUpdate } from '../record/endpoints.js';
import type { SharedPorts } from '../record/result.js';
import { reachAt } from './plan.js';

/* The nodes' replicas, as their node files show them, recorded in berth up's run directory: each change once, in node order. */
export class NodeMirror {
  /** node/service/replica → what was last recorded of it. */
  private readonly seen = new Map<string, string>();
  /** node → its replicas' last recorded states (service/replica → state). */
  private readonly states = new Map<string, Map<string, { service: string; replica: number; state: string }>>();
  private readonly sharedSeen = new Set<string>();
  /** Nodes whose replicas are recorded (see update). */
  private readonly listed = new Set<string>();

  constructor(
    private readonly nodes: readonly string[],
    private readonly addresses: ReadonlyMap<string, string>,
    private readonly record: (u: ReplicaUpdate) => void,
    private readonly recordShared: (service: string, shared: SharedPorts) => void,
  ) {}

  /** Every node replica that changed since the last look; a node's first only after every earlier node's (or its end). */
  update(files: ReadonlyMap<string, NodeFile>): void {
    this.shared(files);
    let inOrder = true;
    for (const node of this.nodes) {
      const f = files.get(node);
      if (!this.listed.has(node)) {
        const known = f !== undefined && (f.replicas !== undefined || ['failed', 'stopped', 'done'].includes(f.state));
        inOrder &&= known;
        if (!inOrder) continue;
        this.listed.add(node);
      }
      for (const r of f?.replicas ?? []) {
        const key = `${node}\0${r.service}\0${r.replica}`;
        const sig = `${r.state}\0${r.pid}\0${r.port}\0${r.host}\0${r.generation ?? ''}`;
        if (this.seen.get(key) === sig) continue;
        this.seen.set(key, sig);
        let mine = this.states.get(node);
        if (!mine) this.states.set(node, (mine = new Map()));
        mine.set(`${r.service}/${r.replica}`, { service: r.service, replica: r.replica, state: r.state });
        this.record({
          service: r.service,
          replica: r.replica,
          node,
          state: r.state,
          host: reachAt(r.host, node, this.addresses),
          ...(r.port !== null ? { port: r.port } : {}),
          ...(r.pid !== null ? { pid: r.pid } : {}),
          ...(r.ports ? { ports: r.ports } : {}),
          ...(r.generation !== undefined ? { generation: r.generation } : {}),
          ...(r.code !== undefined && (r.state === 'exited' || r.state === 'failed') ? { code: r.code } : {}),
        });
      }
    }
  }

  /** A node whose agent is gone: its node file keeps claiming what it last wrote, so its replicas still running are failed. */
  markGone(node: string, detail: string): void {
    for (const r of this.states.get(node)?.values() ?? []) {
      if (r.state === 'exited' || r.state === 'failed') continue;
      r.state = 'failed';
      this.seen.set(`${node}\0${r.service}\0${r.replica}`, 'gone');
      this.record({ service: r.service, replica: r.replica, node, state: 'failed', detail });
    }
  }

  /** Shared ports a node leased (rank 0's node of a `nodes:` job), once, at the address other nodes reach it. */
  private shared(files: ReadonlyMap<string, NodeFile>): void {
    for (const [node, f] of files) {
      for (const [service, s] of Object.entries(f.shared ?? {})) {
        // Each generation of a job has shared ports of its own.
        const key = `${service}\0${f.generation ?? 0}`;
        if (this.sharedSeen.has(key)) continue;
        this.sharedSeen.add(key);
        this.recordShared(service, { host: reachAt(s.host, node, this.addresses), ports: s.ports });
      }
    }
  }
}
