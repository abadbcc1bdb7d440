import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { BerthError, EXIT } from '../errors.js';
import { signalNumber } from '../launch/launch.js';
import { redactText } from '../launch/redact.js';
import { agentStepArgv, nodeRunDir, nodesDir, readNodeFile, writeNodeFile, type NodeEndpoint, type NodeFile } from '../slurm/agents.js';
import { readSlurmEnv, type SlurmEnv } from '../slurm/env.js';
import { compressHostlist } from '../slurm/hostlist.js';
import { nodeAddresses } from '../slurm/nodes.js';
import { deferred } from '../util/deferred.js';
import { selfArgv } from '../util/self.js';
import { runStack, type RunStackOptions, type StackFailure, type StackHandle, type StackResult } from './orchestrate.js';
import { endpointUrl, reachableHost, type Endpoint } from './placeholders.js';
import { assignedOfRecord, makeRunDir, PREVIOUS_RUN, type EndpointsDocument } from './run-dir.js';
import type { ServiceSpec, StackSpec } from './spec.js';

/*
 * Multi-node stacks (`nodes: all | N`) inside a Slurm allocation. `berth up` on the first
 * node becomes the coordinator:
 *   1. it starts one berth agent per node in a single step, `srun --ntasks-per-node=1
 *      --overlap … berth up STACK --agent RUN_DIR` (Slurm launches them: no ssh, no daemon);
 *   2. each agent runs the stack's `nodes:` services of its node with the ordinary
 *      orchestrator, in RUN_DIR/nodes/<node>/, and reports through RUN_DIR/nodes/<node>.json
 *      (replaced atomically): starting, ready with its endpoints, stopped or failed;
 *   3. once every node is ready, the coordinator starts the other services here, with the
 *      nodes' endpoints as ready dependencies ({engine.urls} lists every node's replicas at
 *      an address other nodes reach: the node's name, or Slurm's NodeAddr);
 *   4. a node that fails (before or after ready), or agents that end, stop everything: the
 *      coordinator exits with that node's exit class (70 for a service that failed), naming
 *      its diagnostics under RUN_DIR/nodes/<node>/diagnostics/.
 * The coordinator stops the agents by writing "stop" to the step's stdin (srun --input=all
 * hands it to every agent), never by signals: Slurm signals every process of a step, which
 * would hit the services before their dependents are stopped. EOF (the coordinator died)
 * stops them too.
 */

const POLL_MS = 100;
const AGENT_STOP_GRACE_MS = 5_000;
/** Agents that have not written their node file by then are taken as failed to start. */
const AGENT_START_TIMEOUT_MS = 120_000;

export interface NodePlan {
  /** The allocation's nodes, in Slurm's order. */
  nodes: string[];
  /** Nodes that run an agent: the first M, M the most any service asks for. */
  agentNodes: string[];
  /** Services with `nodes:` (run by the agents). */
  nodeServices: ServiceSpec[];
  /** The other services (run here, once every node is ready). */
  local: StackSpec;
}

const reach = (n: 'all' | number, total: number): number => (n === 'all' ? total : n);

/**
 * How a stack with `nodes:` services runs here; undefined when it runs on this host alone
 * (no `nodes:`, or an allocation of one node — or none, outside Slurm — where `nodes: all`
 * and `nodes: 1` mean this host). Throws BerthError(65) for `nodes: N` beyond the allocation.
 */
export function planNodes(spec: StackSpec, env: NodeJS.ProcessEnv = process.env): NodePlan | undefined {
  const nodeServices = spec.services.filter((s) => s.nodes !== undefined);
  if (nodeServices.length === 0) return undefined;
  // Read only now: a stack without nodes: must not fail over an odd Slurm variable.
  const slurm: SlurmEnv | undefined = readSlurmEnv(env);
  const nodes = slurm && slurm.nodeList.length > 0 ? slurm.nodeList : [];
  const total = Math.max(1, nodes.length);
  for (const s of nodeServices) {
    if (typeof s.nodes === 'number' && s.nodes > total) {
      const where = slurm ? `job ${slurm.jobId} has ${total} node${total === 1 ? '' : 's'}${nodes.length > 0 ? ` (${compressHostlist(nodes)})` : ''}` : 'berth up is not inside a Slurm job (one host)';
      throw new BerthError(EXIT.DATAERR, `${spec.file}:${s.line}: service "${s.name}": nodes: ${s.nodes}, but ${where}; ask Slurm for more nodes (sbatch --nodes=${s.nodes}) or lower nodes:`, { service: s.name });
    }
  }
  if (total === 1) return undefined;
  const m = Math.max(...nodeServices.map((s) => reach(s.nodes!, total)));
  return { nodes, agentNodes: nodes.slice(0, m), nodeServices, local: { ...spec, services: spec.services.filter((s) => s.nodes === undefined) } };
}

/** The services an agent on node `index` of `total` runs. */
export function agentServices(spec: StackSpec, index: number, total: number): ServiceSpec[] {
  return spec.services.filter((s) => s.nodes !== undefined && index < reach(s.nodes, total));
}

/** Where other nodes reach a node's replica: a wildcard listener at the node's address, a specific one as it is. */
function reachAt(e: NodeEndpoint, node: string, addresses: ReadonlyMap<string, string>): string {
  const wildcard = e.host === '0.0.0.0' || e.host === '::' || e.host === '[::]';
  return wildcard ? (addresses.get(node) ?? node) : reachableHost(e.host);
}

/** Every node's replicas of each service, in node order, at addresses other nodes reach. */
export function externalEndpoints(plan: NodePlan, files: ReadonlyMap<string, NodeFile>, addresses: ReadonlyMap<string, string>): Map<string, Endpoint[]> {
  const out = new Map<string, Endpoint[]>();
  for (const s of plan.nodeServices) out.set(s.name, []);
  for (const node of plan.agentNodes) {
    const f = files.get(node);
    if (!f) continue;
    for (const [name, eps] of Object.entries(f.services)) {
      const list = out.get(name);
      if (!list) continue;
      for (const e of eps) list.push({ host: reachAt(e, node, addresses), port: e.port, ...(e.ports ? { ports: e.ports } : {}) });
    }
  }
  return out;
}

// ---- the agent ----------------------------------------------------------------------------

export interface AgentOptions extends Pick<RunStackOptions, 'env' | 'procRoot' | 'stateDir' | 'probeTimeoutMs'> {
  /** The coordinator's run directory (shared filesystem). */
  runDir: string;
  /** Where stop requests come from (default process.stdin; "stop" or EOF). */
  control?: NodeJS.ReadableStream;
  stderr?: NodeJS.WritableStream;
}

/**
 * One node's agent: runs this node's `nodes:` services and keeps its node file current.
 * Resolves with the exit status (its stack's).
 */
export async function runAgent(spec: StackSpec, o: AgentOptions): Promise<number> {
  const env = o.env ?? process.env;
  const slurm = readSlurmEnv(env);
  if (!slurm || slurm.nodeList.length === 0 || slurm.nodeName === undefined) {
    throw new BerthError(EXIT.USAGE, 'up --agent runs inside a Slurm step (srun), started by berth up on a multi-node allocation; it is not meant to be run by hand');
  }
  const node = slurm.nodeName;
  const index = slurm.nodeList.indexOf(node);
  if (index < 0) throw new BerthError(EXIT.SOFTWARE, `agent: this node ${node} is not in SLURM_JOB_NODELIST (${compressHostlist(slurm.nodeList)})`);
  const services = agentServices(spec, index, slurm.nodeList.length);
  const file: NodeFile = { node, pid: process.pid, state: 'starting', updated: new Date().toISOString(), services: {} };
  const publish = (patch: Partial<NodeFile>) => {
    Object.assign(file, patch, { updated: new Date().toISOString() });
    writeNodeFile(o.runDir, file);
  };
  publish({});
  // One log (srun's) collects every agent: each line says which node it is from.
  const err = prefixLines(o.stderr ?? process.stderr, `[${node}] `);
  let handle: StackHandle;
  try {
    handle = runStack({ ...spec, services }, { runDir: nodeRunDir(o.runDir, node), env, status: 'plain', stdout: null, stderr: err, ...(o.procRoot !== undefined ? { procRoot: o.procRoot } : {}), ...(o.stateDir !== undefined ? { stateDir: o.stateDir } : {}), ...(o.probeTimeoutMs !== undefined ? { probeTimeoutMs: o.probeTimeoutMs } : {}) });
  } catch (e) {
    const be = e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, String(e));
    publish({ state: 'failed', exitCode: be.exitCode, failure: { service: '(berth)', replica: 0, exitCode: be.exitCode, reason: be.message } });
    throw be;
  }
  const hostOf = new Map(services.map((s) => [s.name, s.host]));
  handle.ready.then(
    (doc: EndpointsDocument) => {
      const eps: Record<string, NodeEndpoint[]> = {};
      for (const r of doc.replicas) {
        if (r.port === null) continue;
        (eps[r.service] ??= []).push({ replica: r.replica, host: hostOf.get(r.service) ?? r.host ?? '127.0.0.1', port: r.port, ...(r.ports ? { ports: assignedOfRecord(r.ports) } : {}) });
      }
      publish({ state: 'ready', services: eps });
    },
    () => {},
  );
  // Stop on "stop" or EOF from the coordinator (through srun's stdin).
  const control = o.control ?? process.stdin;
  let buf = '';
  const stop = () => void handle.stop();
  const onData = (d: Buffer | string) => {
    buf += d.toString();
    if (/(^|\n)stop\s*(\n|$)/.test(buf)) stop();
  };
  control.on('data', onData);
  control.on('end', stop);
  control.on('error', stop);
  const result = await handle.done;
  control.off('data', onData);
  control.off('end', stop);
  (control as NodeJS.ReadStream).pause?.();
  const failed = result.reason === 'failed';
  const f = result.failure;
  publish({
    state: failed ? 'failed' : 'stopped',
    exitCode: result.exitCode,
    ...(failed && f ? { failure: { service: f.service, replica: f.replica, exitCode: f.exitCode, reason: redactText(f.reason), logs: f.logs, ...(f.diagnostics ? { diagnostics: f.diagnostics } : {}) } } : {}),
  });
  // Stopped on request is a normal end for an agent.
  return failed ? result.exitCode : 0;
}

/** A stream that writes `prefix` before every line to `to`. */
function prefixLines(to: NodeJS.WritableStream, prefix: string): NodeJS.WritableStream {
  let atStart = true;
  return new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      const text = chunk.toString();
      let out = '';
      for (const ch of text.split(/(?<=\n)/)) {
        if (atStart) out += prefix;
        out += ch;
        atStart = ch.endsWith('\n');
      }
      to.write(out, () => cb());
    },
  });
}

// ---- the coordinator -------------------------------------------------------------------------

export interface MultiNodeOptions extends RunStackOptions {
  /** The stack file as the agents open it (absolute: they may start elsewhere). */
  stackFile: string;
  /** Runs berth (default selfArgv(): the single executable, or node + this script); `up STACK --agent DIR` is appended. */
  berth?: string[];
  /** Progress lines ("agents started on n[1-3]", "node n2 ready"). */
  onMessage?: (text: string) => void;
  /**
   * How often the node files are read while the nodes start (default 100 ms; twice that once
   * they are ready). Each look reads every node's file: on a shared filesystem that is one
   * open and read per node per look (docs/scale.md).
   */
  pollMs?: number;
}

/** The run directory, made before any agent starts: a used one would have them run for nothing. */
function makeCoordinatorRunDir(o: MultiNodeOptions): string {
  const path = makeRunDir({ ...(o.runDir !== undefined ? { dir: o.runDir } : {}), ...(o.cwd !== undefined ? { cwd: o.cwd } : {}) }, [...PREVIOUS_RUN, 'nodes']);
  mkdirSync(nodesDir(path), { mode: 0o700 });
  return path;
}

/** Starts a multi-node stack (see the file comment); the handle behaves as runStack()'s. */
export function runMultiNodeStack(spec: StackSpec, plan: NodePlan, o: MultiNodeOptions): StackHandle {
  return new MultiNodeStack(spec, plan, o).handle;
}

class MultiNodeStack {
  readonly handle: StackHandle;
  private readonly runDir: string;
  private srun: ChildProcess | undefined;
  private srunExit: Promise<number | null> = Promise.resolve(null);
  private srunCode: number | null | undefined;
  private local: StackHandle | undefined;
  private stopping: { signal?: NodeJS.Signals; force: boolean } | undefined;
  private nodeFailure: { node: string; file: NodeFile | undefined; why: string } | undefined;
  private wake: (() => void) | undefined;
  private readonly whenReady = deferred<EndpointsDocument>();
  private readonly whenDone = deferred<StackResult>();
  private readonly t0 = performance.now();

  constructor(
    readonly spec: StackSpec,
    private readonly plan: NodePlan,
    private readonly o: MultiNodeOptions,
  ) {
    this.runDir = makeCoordinatorRunDir(o);
    this.whenReady.promise.catch(() => {}); // as in runStack: awaiting `done` alone is fine
    const done = this.whenDone.promise;
    this.handle = {
      spec,
      runDir: this.runDir,
      ready: this.whenReady.promise,
      done,
      endpoints: () => this.local?.endpoints() ?? { stack: spec.file, runDir: this.runDir, pid: process.pid, updated: new Date().toISOString(), replicas: [] },
      stop: (so) => {
        this.stopping ??= { ...(so?.signal ? { signal: so.signal } : {}), force: false };
        if (so?.force) this.stopping.force = true;
        void this.local?.stop(so);
        if (so?.force) this.srun?.kill('SIGKILL');
        this.wake?.();
        return done;
      },
      say: (text) => (this.local ? this.local.say(text) : this.msg(text)),
    };
    void this.main().then(
      (r) => this.whenDone.resolve(r),
      (e) => {
        const be = e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, `internal error (a bug in berth): ${(e as Error)?.stack ?? String(e)}`);
        this.whenReady.reject(be);
        void Promise.resolve(this.local?.stop())
          .then(() => this.stopAgents())
          .then(() => this.whenDone.resolve(this.failedResult({ service: '(berth)', replica: 0, exitCode: be.exitCode, reason: be.message, logs: { out: '', err: '' } })));
      },
    );
  }

  private msg(text: string): void {
    if (this.o.onMessage) this.o.onMessage(text);
    else (this.o.stderr ?? process.stderr)?.write(text + '\n');
  }

  private failedResult(failure: StackFailure): StackResult {
    return { exitCode: failure.exitCode, reason: 'failed', failure, runDir: this.runDir };
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

  /** Node files now; records the first failed node (or agents that ended) in nodeFailure. */
  private readNodes(): Map<string, NodeFile> {
    const files = new Map<string, NodeFile>();
    for (const node of this.plan.agentNodes) {
      const f = readNodeFile(this.runDir, node);
      if (f) files.set(node, f);
      if (!this.nodeFailure && f?.state === 'failed') this.nodeFailure = { node, file: f, why: f.failure?.reason ?? `its agent exited with status ${f.exitCode}` };
    }
    if (!this.nodeFailure && this.srunCode !== undefined && !this.stopping) {
      const silent = this.plan.agentNodes.find((n) => files.get(n)?.state !== 'ready') ?? this.plan.agentNodes[0]!;
      this.nodeFailure = { node: silent, file: files.get(silent), why: `the agents' step (srun) ended with status ${this.srunCode} (see ${join(this.runDir, 'agents.log')})` };
    }
    return files;
  }

  private nodeFailureResult(): StackResult {
    const nf = this.nodeFailure!;
    const f = nf.file?.failure;
    const failure: StackFailure = {
      service: f?.service ?? '(agent)',
      replica: f?.replica ?? 0,
      exitCode: f?.exitCode ?? nf.file?.exitCode ?? EXIT.SOFTWARE,
      reason: `on node ${nf.node}: ${nf.why}`,
      logs: f?.logs ?? { out: join(this.runDir, 'agents.log'), err: join(this.runDir, 'agents.log') },
      ...(f?.diagnostics ? { diagnostics: f.diagnostics } : {}),
    };
    return this.failedResult(failure);
  }

  private async main(): Promise<StackResult> {
    const addresses = await nodeAddresses(this.plan.agentNodes);
    this.startAgents();
    this.msg(`berth: starting ${this.plan.nodeServices.map((s) => s.name).join(', ')} on ${compressHostlist(this.plan.agentNodes)} (one agent per node, srun step; run directory ${this.runDir})`);
    let files = new Map<string, NodeFile>();
    const announced = new Set<string>();
    for (;;) {
      files = this.readNodes();
      for (const [node, f] of files) {
        if (f.state === 'ready' && !announced.has(node)) {
          announced.add(node);
          const list = Object.entries(f.services).flatMap(([s, eps]) => eps.map((e) => `${s}/${e.replica} ${endpointUrl({ host: reachAt(e, node, addresses), port: e.port })}`));
          this.msg(`berth: node ${node} ready: ${list.join(', ') || 'no ports'}`);
        }
      }
      if (!this.nodeFailure && performance.now() - this.t0 > AGENT_START_TIMEOUT_MS) {
        const missing = this.plan.agentNodes.find((n) => !files.has(n));
        if (missing) this.nodeFailure = { node: missing, file: undefined, why: `its agent did not start within ${AGENT_START_TIMEOUT_MS / 1000}s (see ${join(this.runDir, 'agents.log')}; squeue -s shows the step)` };
      }
      if (this.nodeFailure || this.stopping) break;
      if (this.plan.agentNodes.every((n) => files.get(n)?.state === 'ready')) break;
      await this.sleep(this.o.pollMs ?? POLL_MS);
    }
    if (this.nodeFailure) {
      await this.stopAgents();
      const r = this.nodeFailureResult();
      this.whenReady.reject(new BerthError(r.exitCode, r.failure!.reason));
      return r;
    }
    if (this.stopping) {
      await this.stopAgents();
      this.whenReady.reject(new BerthError(EXIT.SOFTWARE, 'the stack was stopped before it was ready'));
      return this.stoppedResult();
    }
    const external = externalEndpoints(this.plan, files, addresses);
    if (this.plan.local.services.length === 0) return this.runWithoutLocal(external);
    const { stackFile: _f, berth: _b, onMessage: _m, pollMs: _p, ...ro } = this.o;
    this.local = runStack(this.plan.local, {
      ...ro,
      runDir: this.runDir,
      external,
      onReady: (doc) => {
        this.o.onReady?.(doc);
        this.whenReady.resolve(doc);
      },
    });
    void this.local.ready.catch((e: Error) => this.whenReady.reject(e));
    // Watch the nodes while the local services run.
    let localDone: StackResult | undefined;
    void this.local.done.then((r) => {
      localDone = r;
      this.wake?.();
    });
    while (!localDone) {
      this.readNodes();
      if (this.nodeFailure) {
        void this.local.stop();
        break;
      }
      await this.sleep((this.o.pollMs ?? POLL_MS) * 2);
    }
    const localResult = await this.local.done;
    await this.stopAgents();
    if (this.nodeFailure) return { ...this.nodeFailureResult(), ...(localResult.readyMs !== undefined ? { readyMs: localResult.readyMs } : {}) };
    return localResult;
  }

  /** Only `nodes:` services: ready once every node is; runs until stopped or a node fails. */
  private async runWithoutLocal(external: Map<string, Endpoint[]>): Promise<StackResult> {
    const doc: EndpointsDocument = {
      stack: this.spec.file,
      runDir: this.runDir,
      pid: process.pid,
      updated: new Date().toISOString(),
      replicas: [...external].flatMap(([service, eps]) =>
        eps.map((e, replica) => ({ service, replica, host: e.host, port: e.port, url: `http://${e.host}:${e.port}`, pid: null, state: 'ready' as const, since: new Date().toISOString() })),
      ),
    };
    this.o.onReady?.(doc);
    this.whenReady.resolve(doc);
    while (!this.stopping) {
      this.readNodes();
      if (this.nodeFailure) break;
      await this.sleep((this.o.pollMs ?? POLL_MS) * 2);
    }
    await this.stopAgents();
    return this.nodeFailure ? this.nodeFailureResult() : this.stoppedResult();
  }

  private stoppedResult(): StackResult {
    const sig = this.stopping?.signal;
    return { exitCode: sig ? 128 + signalNumber(sig) : 0, reason: sig ? 'signal' : 'stopped', ...(sig ? { signal: sig } : {}), runDir: this.runDir, readyMs: Math.round(performance.now() - this.t0) };
  }

  private startAgents(): void {
    const berth = this.o.berth ?? selfArgv();
    const argv = agentStepArgv({ nodes: this.plan.agentNodes, agent: [...berth, 'up', this.o.stackFile, '--agent', this.runDir] });
    // --input=all: every agent reads the coordinator's stop request (and EOF) from its stdin.
    argv.splice(1, 0, '--input=all');
    const log = openSync(join(this.runDir, 'agents.log'), 'a', 0o600);
    try {
      this.srun = spawn(argv[0]!, argv.slice(1), { env: this.o.env ?? process.env, stdio: ['pipe', log, log] });
    } finally {
      closeSync(log);
    }
    const child = this.srun;
    this.srunExit = new Promise((res) => {
      child.on('error', (e) => {
        this.srunCode = null;
        this.nodeFailure ??= { node: this.plan.agentNodes[0]!, file: undefined, why: `cannot start srun: ${e.message} (is this a Slurm allocation with srun on PATH?)` };
        this.wake?.();
        res(null);
      });
      child.on('exit', (code, signal) => {
        this.srunCode = code ?? (signal ? 128 : null);
        this.wake?.();
        res(this.srunCode);
      });
    });
    child.stdin?.on('error', () => {}); // srun gone: its exit says why
  }

  /** "stop" to every agent (srun stdin), then EOF; srun is killed if they outlive the grace. */
  private async stopAgents(): Promise<void> {
    const child = this.srun;
    if (!child || this.srunCode !== undefined) return;
    child.stdin?.end('stop\n');
    const grace = Math.max(0, ...this.plan.nodeServices.map((s) => s.stopGraceMs)) * 2 + AGENT_STOP_GRACE_MS;
    const timer = setTimeout(() => child.kill('SIGKILL'), this.stopping?.force ? 0 : grace);
    await this.srunExit;
    clearTimeout(timer);
  }
}
