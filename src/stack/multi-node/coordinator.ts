import { mkdirSync } from 'node:fs';
import { BerthError, EXIT } from '../../errors.js';
import { signalNumber } from '../../launch/launch.js';
import { AGENT_GENERATION_ENV, nodesDir, readNodeFiles, writeCoordinatorFile, type NodeFile } from './node-files.js';
import { compressHostlist } from '../../slurm/hostlist.js';
import { nodeAddresses } from '../../slurm/nodes.js';
import { requireSlurmProgram } from '../../slurm/programs.js';
import { deferred } from '../../util/deferred.js';
import { selfArgv } from '../../util/self.js';
import { runStack, type StackHandle, type StackResult } from '../run/orchestrate.js';
import { endpointHostPort, endpointUrl } from '../file/endpoint.js';
import { makeRunDir, PREVIOUS_RUN } from '../record/create-stack-run-dir.js';
import type { EndpointsDocument } from '../record/endpoints.js';
import type { StackSpec } from '../file/spec.js';
import { AgentsStep } from './agents-step.js';
import { FirstNodeRecord } from './first-node-record.js';
import { failedNode, failedResult, firstFailure, nodeFailureResult, type NodeFailure } from './node-failure.js';
import { JobGenerations } from './job-generations.js';
import type { MultiNodeOptions } from './coordinator-options.js';
import { NodeMirror } from './node-mirror.js';
import { endpointOnNode, externalEndpoints, graphNodes, onNode, type NodePlan } from './plan.js';

/*
 * berth up of a multi-node stack, on the allocation's first node (see index.ts). The `nodes:`
 * services are external services of the first node's orchestrator, ready when every node is;
 * its teardown stops the agents in their turn (each stops its own services dependents first).
 */

const POLL_MS = 100;
/** Agents that have not written their node file by then are taken as failed to start. */
const AGENT_START_TIMEOUT_MS = 120_000;
/** A line of an agent's status display ("[n2] 12:00:01.234 engine/0 ready …"): mirrored already, not followed. */
const STATUS_LINE = /^\[[^\]]*\] \d\d:\d\d:\d\d\.\d{3} /;

export function runMultiNodeStack(spec: StackSpec, plan: NodePlan, o: MultiNodeOptions): StackHandle {
  return new MultiNodeStack(spec, plan, o).handle;
}

class MultiNodeStack {
  readonly handle: StackHandle;
  private readonly runDir: string;
  private step: AgentsStep | undefined;
  private local: StackHandle | undefined;
  private readonly out: FirstNodeRecord;
  private addresses = new Map<string, string>();
  private stopping: { signal?: NodeJS.Signals; force: boolean } | undefined;
  private agentsStopAsked = false;
  /** `gone`: its agent ended unasked (srun said so): its replicas are recorded as failed. */
  private nodeFailure: NodeFailure | undefined;
  private wake: (() => void) | undefined;
  private localReady = false;
  private localDone: StackResult | undefined;
  private allNodesReady = false;
  private readyMs: number | undefined;
  private readonly announced = new Set<string>();
  private mirrorer: NodeMirror | undefined;
  private readonly whenReady = deferred<EndpointsDocument>();
  private readonly whenDone = deferred<StackResult>();
  private readonly t0 = performance.now();
  /** Nodes that run a rank of a `nodes:` job: once every one is done, so is the stack. */
  private readonly jobNodes: string[];
  /** A `nodes:` job restarted as a group: its generations (job-generations.ts). */
  private readonly gens: JobGenerations;
  private agentArgv: string[] = [];
  private agentsStartedAt = performance.now();

  constructor(
    readonly spec: StackSpec,
    private readonly plan: NodePlan,
    private readonly o: MultiNodeOptions,
  ) {
    // Made before any agent starts: a used one would have them run for nothing.
    const where = { ...(o.runDir !== undefined ? { dir: o.runDir } : {}), ...(o.cwd !== undefined ? { cwd: o.cwd } : {}) };
    this.runDir = makeRunDir(where, [...PREVIOUS_RUN, 'nodes']);
    mkdirSync(nodesDir(this.runDir), { mode: 0o700 });
    this.out = new FirstNodeRecord(spec.file, this.runDir, o);
    const jobs = plan.nodeServices.filter((s) => s.job);
    this.jobNodes = plan.nodes.filter((_, i) => jobs.some((s) => onNode(s.nodes!, i, plan.nodes.length)));
    this.gens = new JobGenerations(
      {
        plan,
        runDir: this.runDir,
        label: spec.file,
        msg: (text) => this.out.msg(text),
        send: (c) => this.step?.send(c),
        stopAgents: () => this.stopAgents(),
        startAgents: () => {
          this.allNodesReady = false;
          this.announced.clear();
          this.startAgents();
        },
        stopping: () => this.stopping !== undefined,
        nodeFiles: () => readNodeFiles(this.runDir, this.plan.agentNodes),
      },
      this.jobNodes,
    );
    this.whenReady.promise.catch(() => {}); // as in runStack: awaiting `done` alone is fine
    const done = this.whenDone.promise;
    this.handle = {
      spec,
      runDir: this.runDir,
      ready: this.whenReady.promise,
      done,
      endpoints: () => this.out.endpoints(),
      stop: (so) => {
        this.stopping ??= { ...(so?.signal ? { signal: so.signal } : {}), force: false };
        if (so?.force) this.stopping.force = true;
        void this.local?.stop(so);
        if (so?.force) void this.step?.stop(0);
        this.wake?.();
        return done;
      },
      say: (text) => this.out.say(text),
      setExternal: (service, endpoints, statuses) => this.local?.setExternal(service, endpoints, statuses),
      // Peers are an agent's business (peer-wait.ts): the first node's services get none.
      setPeers: () => {},
      recordExternal: (u) => this.out.record(u),
      recordShared: (service, shared) => this.out.recordShared(service, shared),
      endGeneration: (service, generation, why) => this.local?.endGeneration(service, generation, why),
    };
    void this.main().then(
      (r) => this.finish(r),
      (e) => {
        const be = e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, `internal error (a bug in berth): ${(e as Error)?.stack ?? String(e)}`);
        this.whenReady.reject(be);
        void Promise.resolve(this.local?.stop())
          .then(() => this.local?.done)
          .then(() => this.stopAgents())
          .then(() =>
            this.finish(failedResult(this.runDir, { service: '(berth)', replica: 0, exitCode: be.exitCode, reason: be.message, logs: { out: '', err: '' } })),
          );
      },
    );
  }

  private finish(r: StackResult): void {
    this.out.close();
    this.whenDone.resolve(this.readyMs !== undefined && r.readyMs === undefined ? { ...r, readyMs: this.readyMs } : r);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((res) => {
      const t = setTimeout(res, ms);
      this.wake = () => {
        clearTimeout(t);
        res();
      };
    });
  }

  /** Node files now; records the first failed node (or agents that ended unasked) in nodeFailure. */
  private readNodes(): Map<string, NodeFile> {
    const files = readNodeFiles(this.runDir, this.plan.agentNodes);
    if (this.nodeFailure) return files;
    const w = { generation: this.gens.generation, step: this.step, agentNodes: this.plan.agentNodes, stopAsked: this.agentsStopAsked };
    this.nodeFailure = failedNode(files, { ...w, allDone: this.allDone(files) });
    // Said now: the stop of every node takes their stop_grace, and nothing else tells why.
    const gone = this.nodeFailure?.gone ? this.nodeFailure.node : undefined;
    if (gone) this.out.msg(`berth: node ${gone}: its agent ended unasked (srun: ${this.step?.ended.get(gone)}); stopping the stack`);
    return files;
  }

  private allDone(files: ReadonlyMap<string, NodeFile>): boolean {
    return this.jobNodes.length > 0 && this.jobNodes.every((n) => files.get(n)?.state === 'done');
  }

  /** The stack is ready once every node is and the services here are. */
  private maybeReady(): void {
    if (this.readyMs !== undefined || !this.allNodesReady || (this.local && !this.localReady)) return;
    this.readyMs = Math.round(performance.now() - this.t0);
    const doc = this.out.endpoints();
    try {
      this.o.onReady?.(doc);
    } catch {
      // the caller's problem, not the stack's
    }
    this.whenReady.resolve(doc);
  }

  private async main(): Promise<StackResult> {
    const first = this.plan.nodes[0]!;
    requireSlurmProgram('srun', 'to start one agent per node', this.o.env ?? process.env);
    this.addresses = await nodeAddresses([...new Set([first, ...this.plan.agentNodes])]);
    this.mirrorer = new NodeMirror(
      this.plan.agentNodes,
      this.addresses,
      (u) => this.out.record(u),
      (service, shared) => this.out.recordShared(service, shared),
    );
    writeCoordinatorFile(this.runDir, { node: first, address: this.addresses.get(first)!, addresses: Object.fromEntries(this.addresses), pid: process.pid });
    const { stackFile, berth: b, onMessage: _m, pollMs: _p, ...ro } = this.o;
    this.agentArgv = [...(b ?? selfArgv()), 'up', stackFile, '--agent', this.runDir, ...(this.o.follow ? ['--follow'] : [])];
    this.startAgents();
    if (this.plan.local.services.length > 0) {
      this.local = runStack(this.plan.local, {
        ...ro,
        runDir: this.runDir,
        externalServices: graphNodes(this.plan.nodeServices),
        stopExternal: () => this.stopAgents(),
        onReady: () => {
          this.localReady = true;
          this.maybeReady();
        },
      });
      void this.local.ready.catch((e: Error) => this.whenReady.reject(e));
      void this.local.done.then((r) => {
        this.localDone = r;
        this.wake?.();
      });
      this.out.local = this.local;
    } else this.out.recordHere();
    // A service here that other nodes' services depend on must listen where they reach it.
    for (const s of this.plan.local.services) {
      if (!this.plan.nodeServices.some((n) => n.dependsOn.some((d) => d.service === s.name))) continue;
      if (/^(127\.|localhost$|::1$|\[::1\]$)/.test(s.host)) {
        const msg = `service "${s.name}" listens on ${s.host}, but services on other nodes depend on it (they are given ` +
          `${this.addresses.get(first)}); give it host: 0.0.0.0 unless every node is this host`;
        this.out.say(`berth: warning: ${msg}`);
        this.o.onWarning?.(msg);
      }
    }
    this.out.msg(`berth: starting ${this.plan.nodeServices.map((s) => s.name).join(', ')} on ${compressHostlist(this.plan.agentNodes)} (one agent per ` +
      `node, srun step; run directory ${this.runDir})`);
    let jobDone = false;
    for (;;) {
      const files = this.readNodes();
      this.mirrorer!.update(files);
      this.follow();
      for (const [node, f] of files) {
        if ((f.state === 'ready' || f.state === 'done') && !this.announced.has(node)) {
          this.announced.add(node);
          const list = Object.entries(f.services).flatMap(([s, eps]) => eps.map((e) => {
            const at = { ...endpointOnNode(e, node, this.addresses), scheme: this.spec.services.find((x) => x.name === s)?.scheme };
            return `${s}/${e.replica} ${endpointUrl(at) ?? endpointHostPort(at)}`;
          }));
          this.out.msg(`berth: node ${node} ready: ${list.join(', ') || 'no ports'}`);
        }
      }
      if (this.gens.holding && this.allNodesReady) await this.gens.giveBack();
      this.gens.poll(files);
      if (!this.nodeFailure && performance.now() - this.agentsStartedAt > AGENT_START_TIMEOUT_MS) {
        const missing = this.plan.agentNodes.find((n) => !files.has(n));
        if (missing) {
          const why = `its agent did not start within ${AGENT_START_TIMEOUT_MS / 1000}s (see ${this.step?.log}; squeue -s shows the step)`;
          this.nodeFailure = { node: missing, file: undefined, why };
        }
      }
      if (!this.allNodesReady && !this.nodeFailure && this.plan.agentNodes.every((n) => ['ready', 'done'].includes(files.get(n)?.state ?? ''))) {
        this.allNodesReady = true;
        // Before the services waiting for the nodes start: "stack ready" (and --json) come first.
        if (this.localReady || !this.local) this.maybeReady();
        const external = externalEndpoints(this.plan, files, this.addresses);
        for (const s of this.plan.nodeServices) this.local?.setExternal(s.name, external.get(s.name) ?? []);
      }
      if (this.allDone(files)) jobDone = true;
      if (this.nodeFailure && !this.localDone && !this.stopping && (await this.gens.next(this.nodeFailure))) {
        this.nodeFailure = undefined;
        continue;
      }
      if (this.nodeFailure || this.localDone || jobDone || (this.stopping && !this.local)) break;
      await this.sleep((this.o.pollMs ?? POLL_MS) * (this.allNodesReady ? 2 : 1));
    }
    if (this.local && !this.localDone) void this.local.stop();
    const localResult = await this.local?.done;
    await this.stopAgents();
    await this.gens.giveBack();
    this.follow();
    if (this.nodeFailure?.file?.rankFailure) {
      // Ranks on several nodes may have failed at about the same time: the first of all is the one.
      const first = firstFailure(this.readNodes(), this.gens.generation);
      if (first?.rankFailure) this.nodeFailure = { node: first.node, file: first, why: '' };
    }
    if (this.nodeFailure) return nodeFailureResult(this.plan, this.runDir, this.nodeFailure);
    if (jobDone) {
      const job = this.plan.nodeServices.find((s) => s.job)!;
      return { exitCode: 0, reason: 'job', job: { service: job.name, replica: 0, status: 0, code: 0, signal: null }, runDir: this.runDir };
    }
    if (localResult) return localResult;
    const sig = this.stopping?.signal;
    return { exitCode: sig ? 128 + signalNumber(sig) : 0, reason: sig ? 'signal' : 'stopped', ...(sig ? { signal: sig } : {}), runDir: this.runDir };
  }

  /** One agents step: this generation of the job (BERTH_AGENT_GENERATION), the log read from where it stands. */
  private startAgents(): void {
    const g = this.gens.generation;
    const env = { ...(this.o.env ?? process.env), ...(g > 0 ? { [AGENT_GENERATION_ENV]: String(g) } : {}) };
    this.step = new AgentsStep(this.runDir, this.plan.agentNodes, this.agentArgv, env, () => this.wake?.(), this.o.follow === true);
    if (g > 0) this.step.skipLogSoFar();
    this.agentsStartedAt = performance.now();
    this.agentsStopAsked = false;
    this.step.start();
  }

  /** `--follow`: the agents' output (their services' lines, their messages), each line prefixed with its node. */
  private follow(): void {
    if (!this.o.follow || !this.step) return;
    for (const line of this.step.lines()) if (line !== '' && !STATUS_LINE.test(line)) this.out.say(line);
  }

  /** Every agent asked to stop (each stops its services dependents first); their last states recorded. */
  private async stopAgents(): Promise<void> {
    if (!this.step) return;
    this.agentsStopAsked = true;
    const grace = Math.max(0, ...this.plan.nodeServices.map((s) => s.stopGraceMs)) * 2;
    await this.step.stop(this.stopping?.force ? 0 : grace);
    this.mirrorer?.update(this.readNodes());
    // Its node file still shows what it last wrote: its replicas are not there any more.
    const nf = this.nodeFailure;
    if (nf?.gone) this.mirrorer?.markGone(nf.node, `its agent on ${nf.node} ended unasked; berth up stopped the stack`);
  }
}
