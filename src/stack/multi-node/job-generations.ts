import { leaseListened } from '../../allocate/lease-listened.js';
import type { Reservation } from '../../allocate/allocation-types.js';
import { archiveNodeFile, type NodeFile } from './node-files.js';
import type { ServiceSpec } from '../file/spec.js';
import type { ControlLine } from './agent-control.js';
import type { NodeFailure } from './node-failure.js';
import { serviceNodes, type NodePlan } from './plan.js';

/*
 * berth up's side of a `nodes:` job restarted as a group: the first node decides every generation.
 *   A rank failed: its generation ends in place. Every agent is told (`end G`), stops its ranks
 *   and proves them gone (`gone: G`); once every job node has, `start G+1`.
 *   An agent is gone: every agent is stopped, and a new step starts them again as generation G+1.
 */

export interface GenerationHost {
  readonly plan: NodePlan;
  readonly runDir: string;
  readonly label: string;
  msg(text: string): void;
  send(c: ControlLine): void;
  stopAgents(): Promise<void>;
  startAgents(generation: number): void;
  stopping(): boolean;
  nodeFiles(): Map<string, NodeFile>;
}

export class JobGenerations {
  /** The generation the job is in (or, while `waiting`, the one about to start). */
  generation = 0;
  /** In place: the generation every job node must report gone before the next starts. */
  private waiting: { service: string; ended: number } | undefined;
  /** A new step: the old generation's fresh shared ports, leased here until the next one has its own. */
  private held: Reservation[] = [];

  constructor(
    private readonly host: GenerationHost,
    private readonly jobNodes: readonly string[],
  ) {}

  /** A node failed: 'in-place' or 'new-step' when the job goes on as its next generation, undefined: the stack ends. */
  async next(nf: NodeFailure): Promise<'in-place' | 'new-step' | undefined> {
    const { plan } = this.host;
    const g = this.generation;
    if (nf.gone) {
      const job = plan.nodeServices.find((s) => s.job && s.restart.policy === 'on-failure' && serviceNodes(s.nodes!, plan.nodes).includes(nf.node));
      const nextG = this.waiting ? g : g + 1;
      if (!job || nextG > job.restart.limit) return undefined;
      this.host.msg(
        `berth: ${job.name}: generation ${nextG - 1} ends: the agent on node ${nf.node} is gone; stopping every node's agents, then generation ` +
          `${nextG} of ${job.restart.limit + 1} with new agents`,
      );
      await this.newStep(job, nextG);
      return this.host.stopping() ? undefined : 'new-step';
    }
    if (this.waiting) return undefined; // a failure while the generation ends: the stack ends
    const rf = nf.file?.rankFailure;
    const job = rf ? plan.nodeServices.find((s) => s.name === rf.service) : undefined;
    if (!job || !rf || !job.job || job.restart.policy !== 'on-failure' || g >= job.restart.limit) return undefined;
    const why = `rank ${rf.rank} on node ${nf.node} exited with status ${rf.status}`;
    this.host.msg(`berth: ${job.name}: generation ${g} ends: ${why}; stopping every rank on every node, then generation ${g + 1} of ${job.restart.limit + 1}`);
    this.host.send({ kind: 'end', generation: g, service: job.name, why });
    this.waiting = { service: job.name, ended: g };
    this.generation = g + 1;
    return 'in-place';
  }

  /**
   * Each look at the node files: the next generation starts once every job node's old one is
   * gone, unless the stack is stopping meanwhile (then the generation ending is the last).
   */
  poll(files: ReadonlyMap<string, NodeFile>): void {
    const w = this.waiting;
    if (!w || this.host.stopping() || !this.jobNodes.every((n) => (files.get(n)?.gone ?? -1) >= w.ended)) return;
    this.waiting = undefined;
    this.host.msg(`berth: ${w.service}: generation ${w.ended} is gone on every node; starting generation ${w.ended + 1}`);
    this.host.send({ kind: 'start', generation: w.ended + 1 });
  }

  /** A new step holds ports here until its nodes are ready. */
  get holding(): boolean {
    return this.held.length > 0;
  }

  async giveBack(): Promise<void> {
    const held = this.held;
    this.held = [];
    await Promise.all(held.map((r) => r.release()));
  }

  private async newStep(job: ServiceSpec, generation: number): Promise<void> {
    const fresh = freshSharedPorts(job, this.host.nodeFiles(), this.host.plan.nodes[0]!);
    await this.host.stopAgents();
    if (this.host.stopping()) return;
    this.waiting = undefined;
    // The old generation's agents are gone, and their leases with them: its shared ports are held here.
    this.held = await holdOldPorts(fresh, `${this.host.label}:${job.name}/generation ${generation - 1}`);
    for (const n of this.host.plan.agentNodes) archiveNodeFile(this.host.runDir, n, generation - 1);
    this.generation = generation;
    this.host.startAgents(generation);
  }
}

/** The job's fresh (not kept) shared ports that `node` leased in this generation, from the node files. */
function freshSharedPorts(job: ServiceSpec, files: ReadonlyMap<string, NodeFile>, node: string): number[] {
  const shared = files.get(node)?.shared?.[job.name];
  if (!shared) return [];
  return shared.ports.filter((a) => !job.sharedKept.includes(a.name)).flatMap((a) => a.ports);
}

/**
 * The old generation's fresh shared ports, leased here (their agent is gone, its leases with
 * it) until the next one has its own, so the two differ; those someone else has now are skipped.
 */
async function holdOldPorts(ports: readonly number[], label: string): Promise<Reservation[]> {
  const out: Reservation[] = [];
  for (const p of ports) {
    const got = await leaseListened(p, label);
    if ('reservation' in got) out.push(got.reservation);
  }
  return out;
}
