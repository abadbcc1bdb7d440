import { join } from 'node:path';
import { Writable } from 'node:stream';
import { BerthError, EXIT } from '../../errors.js';
import { redactText } from '../../util/redact.js';
import { agentGeneration, keepNodeFile, nodeRunDir, writeNodeFile, type NodeFile, type NodeReplica } from './node-files.js';
import { readSlurmEnv } from '../../slurm/env.js';
import { compressHostlist } from '../../slurm/hostlist.js';
import { runStack, type RunStackOptions, type StackHandle } from '../run/orchestrate.js';
import { rankOf } from '../file/ranks.js';
import { assignedOfRecord, sharedOfDocument, type EndpointsDocument, type StackEvent } from '../record/endpoints.js';
import type { StackSpec } from '../file/spec.js';
import type { SharedPorts } from '../record/result.js';
import { AgentGenerations, controlLines } from './agent-control.js';
import { waitForLocal } from './local-deps.js';
import { agentServices, graphNodes } from './plan.js';
import { leasedPeers, namesItself, waitForPeers } from './peer-wait.js';
import { SharedWait } from './shared-wait.js';

/*
 * One node's agent: runs this node's `nodes:` services with the ordinary orchestrator, in
 * RUN_DIR/nodes/<node>/, and keeps its node file current. Services of the first node that its
 * services depend on are external here (local-deps.ts).
 */

/** Node file writes are batched: a node's replicas change state in bursts. */
const PUBLISH_GAP_MS = 50;

export interface AgentOptions extends Pick<RunStackOptions, 'env' | 'procRoot' | 'stateDir' | 'probeTimeoutMs'> {
  /** The coordinator's run directory (shared filesystem). */
  runDir: string;
  /** Stream the services' output into the agent's stderr (berth up --follow shows it, prefixed with the node). */
  follow?: boolean;
  /** Where stop requests come from (default process.stdin; "stop" or EOF). */
  control?: NodeJS.ReadableStream;
  stderr?: NodeJS.WritableStream;
}

/** Resolves with the exit status: 0 when stopped on request or done, its stack's status when it failed. */
export async function runAgent(spec: StackSpec, o: AgentOptions): Promise<number> {
  const env = o.env ?? process.env;
  const slurm = readSlurmEnv(env);
  if (!slurm || slurm.nodeList.length === 0 || slurm.nodeName === undefined) {
    throw new BerthError(
      EXIT.USAGE,
      'up --agent runs inside a Slurm step (srun), started by berth up on a multi-node allocation; it is not meant to be run by hand',
    );
  }
  const node = slurm.nodeName;
  const index = slurm.nodeList.indexOf(node);
  if (index < 0) throw new BerthError(EXIT.SOFTWARE, `agent: this node ${node} is not in SLURM_JOB_NODELIST (${compressHostlist(slurm.nodeList)})`);
  const services = agentServices(spec, index, slurm.nodeList.length);
  const jobs = new Set(services.filter((s) => s.job).map((s) => s.name));
  const isRankFailure = rankFailureCheck(jobs);
  const local = spec.services.filter((s) => s.nodes === undefined && services.some((x) => x.dependsOn.some((d) => d.service === s.name)));
  // A job restarted as a group across nodes: berth up starts one agents step per generation.
  const generation = agentGeneration(env);
  const file: NodeFile = {
    node,
    pid: process.pid,
    state: 'starting',
    updated: new Date().toISOString(),
    services: {},
    ...(generation !== undefined ? { generation } : {}),
  };
  const publish = (patch: Partial<NodeFile> = {}) => {
    Object.assign(file, patch, { updated: new Date().toISOString() });
    writeNodeFile(o.runDir, file);
  };
  publish();
  // One log (srun's) collects every agent: each line says which node it is from.
  const err = prefixLines(o.stderr ?? process.stderr, `[${node}] `);
  const codes = new Map<string, number | null>();
  let handle: StackHandle | undefined;
  let publishTimer: NodeJS.Timeout | undefined;
  let ended = false;
  const replicas = (): NodeReplica[] =>
    (handle?.endpoints().replicas ?? []).map((r) => {
      const code = codes.get(`${r.service}/${r.replica}`);
      return {
        service: r.service,
        replica: r.replica,
        state: r.state,
        host: r.host,
        port: r.port,
        pid: r.pid,
        ...(r.ports ? { ports: assignedOfRecord(r.ports) } : {}),
        ...(code !== undefined ? { code } : {}),
        ...(r.generation !== undefined ? { generation: r.generation } : {}),
      };
    });
  const publishSoon = () => {
    if (ended) return;
    publishTimer ??= setTimeout(() => {
      publishTimer = undefined;
      if (!ended) publish({ replicas: replicas() });
    }, PUBLISH_GAP_MS);
  };
  // The coordinator's word (agent-control.ts, through srun's stdin), also while waiting to start.
  const control = o.control ?? process.stdin;
  let stopAsked = false;
  const gens = new AgentGenerations();
  const stop = () => {
    stopAsked = true;
    gens.stop();
    void handle?.stop();
  };
  const onData = controlLines((c) => {
    if (c.kind === 'stop') return stop();
    if (c.kind === 'start') return gens.started(c.generation);
    gens.endAsked(c.generation);
    handle?.endGeneration(c.service, c.generation, c.why);
  });
  control.on('data', onData);
  control.on('end', stop);
  control.on('error', stop);
  const unlisten = () => {
    control.off('data', onData);
    control.off('end', stop);
    // Not paused: stdin keeps this process alive until srun forwards EOF (why: agents-step.ts).
  };
  const shared = new SharedWait(services, slurm.nodeList, index, o.runDir, generation ?? 0);
  const hostOf = new Map(services.map((s) => [s.name, s.host]));
  // Services that name themselves start once every node's replicas are known (peer-wait.ts).
  const peerServices = services.filter(namesItself);
  let sharedPorts: RunStackOptions['shared'];
  // The generation this node's job ranks are in (they restart in place on the coordinator's word).
  let gen = generation ?? 0;
  try {
    for (;;) {
      // Shared ports whose rank 0 runs on another node: that node's agent publishes them.
      if (shared.needed()) sharedPorts = await shared.wait(() => stopAsked || gens.ended(gen), gen);
      if (stopAsked || !gens.ended(gen)) break;
      // Its generation ended elsewhere before any rank started here: nothing of it to stop.
      publish({ gone: gen, generation: gen + 1 });
      if (!(await gens.startOf(gen + 1))) break;
      gen++;
    }
    if (stopAsked) {
      unlisten();
      publish({ state: 'stopped', exitCode: 0 });
      return 0;
    }
    handle = runStack(
      { ...spec, services },
      {
        runDir: nodeRunDir(o.runDir, node),
        env,
        status: 'plain',
        stdout: null,
        stderr: err,
        follow: o.follow === true,
        topology: { node, nodeIndex: index, nodes: slurm.nodeList },
        // Always given: an agent's ranks restart only on berth up's word, for every node at once.
        generation: gen,
        ...(jobs.size > 0
          ? {
              generationGate: async (service: string, ended: number, leased: SharedPorts | undefined) => {
                // The ended generation's record is kept; this node then waits, its next shared ports published.
                keepNodeFile(o.runDir, { ...file, replicas: replicas(), gone: ended }, ended);
                publish({ gone: ended, generation: ended + 1, ...(leased ? { shared: { ...file.shared, [service]: leased } } : {}) });
                if (!(await gens.startOf(ended + 1))) return undefined;
                publish({ rankFailure: undefined });
                if (!shared.elsewhere.has(service)) return {};
                const given = (await shared.wait(() => stopAsked, ended + 1))?.get(service);
                return given ? { shared: given } : undefined;
              },
            }
          : {}),
        ...(sharedPorts ? { shared: sharedPorts } : {}),
        ...(peerServices.length > 0 ? { peerServices: peerServices.map((s) => s.name) } : {}),
        onReserved: (doc) => {
          // Shared ports whose rank 0 is here: the service's other nodes wait for them (shared-wait.ts).
          const own = Object.entries(sharedOfDocument(doc)).filter(([svc]) => !shared.elsewhere.has(svc));
          // Every replica's leased endpoints: the other nodes' peer services wait for them (peer-wait.ts).
          publish({ peers: leasedPeers(doc.replicas, hostOf), ...(own.length > 0 ? { shared: Object.fromEntries(own) } : {}) });
        },
        onEvent: (e) => {
          if (e.code !== undefined) codes.set(`${e.service}/${e.replica}`, e.code);
          const g = e.generation ?? 0;
          if (isRankFailure(e) && (!file.rankFailure || (file.rankFailure.generation ?? 0) < g) && !stopAsked) {
            const svc = services.find((s) => s.name === e.service)!;
            const here = handle?.endpoints().replicas.filter((r) => r.service === e.service).length ?? 1;
            const rank = rankOf(svc, e.replica, here, { node, nodeIndex: index, nodes: slurm.nodeList }).rank;
            publish({
              rankFailure: { service: e.service, replica: e.replica, rank, status: e.code ?? EXIT.SOFTWARE, t: e.t, generation: g },
              replicas: replicas(),
            });
          } else publishSoon();
        },
        ...(local.length > 0 ? { externalServices: graphNodes(local) } : {}),
        ...(o.procRoot !== undefined ? { procRoot: o.procRoot } : {}),
        ...(o.stateDir !== undefined ? { stateDir: o.stateDir } : {}),
        ...(o.probeTimeoutMs !== undefined ? { probeTimeoutMs: o.probeTimeoutMs } : {}),
      },
    );
  } catch (e) {
    unlisten();
    const be = e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, String(e));
    publish({ state: 'failed', exitCode: be.exitCode, failure: { service: '(berth)', replica: 0, exitCode: be.exitCode, reason: be.message } });
    throw be;
  }
  const h = handle;
  if (stopAsked) void h.stop();
  if (peerServices.length > 0) void waitForPeers(o.runDir, peerServices, slurm.nodeList, (svc, eps) => h.setPeers(svc, eps), () => ended || stopAsked);
  h.ready.then(
    (doc: EndpointsDocument) => {
      if (!ended) publish({ state: 'ready', services: leasedPeers(doc.replicas, hostOf), replicas: replicas() });
    },
    () => {},
  );
  // Services of the first node this node's services wait for.
  if (local.length > 0) void waitForLocal(o.runDir, services, local, h, () => ended);
  const result = await h.done;
  unlisten();
  const failed = result.reason === 'failed';
  const f = result.failure;
  const reps = replicas();
  ended = true;
  clearTimeout(publishTimer);
  // A job whose every rank here exited 0: this node is done (berth up ends the stack once every node is).
  const done = result.reason === 'job' && result.exitCode === 0;
  const jobFailed = result.reason === 'job' && result.exitCode !== 0;
  const job = jobFailed ? result.job : undefined;
  const log = job ? join(h.runDir, 'logs', `${job.service}-${job.replica}`) : '';
  const failure: NodeFile['failure'] =
    failed && f
      ? {
          service: f.service,
          replica: f.replica,
          exitCode: f.exitCode,
          reason: redactText(f.reason),
          logs: f.logs,
          ...(f.diagnostics ? { diagnostics: f.diagnostics } : {}),
        }
      : job
        ? {
            service: job.service,
            replica: job.replica,
            exitCode: result.exitCode,
            reason: job.signal ? `was killed by ${job.signal}` : `exited with status ${job.status}`,
            logs: { out: `${log}.out`, err: `${log}.err` },
          }
        : undefined;
  publish({
    state: failed || jobFailed ? 'failed' : done ? 'done' : 'stopped',
    exitCode: result.exitCode,
    replicas: reps,
    ...(failure ? { failure } : {}),
  });
  // Stopped on request, or done, is a normal end for an agent.
  return failed || jobFailed ? result.exitCode : 0;
}

/**
 * Whether an event is a job's rank failing on its own (a non-zero status, a signal, a failed
 * launch): a rank berth stopped (the teardown or its generation's end reports it 'stopping'
 * first) did not fail.
 */
function rankFailureCheck(jobs: ReadonlySet<string>): (e: StackEvent) => boolean {
  const stopping = new Set<string>();
  return (e) => {
    if (!jobs.has(e.service)) return false;
    const key = `${e.service}/${e.replica}`;
    if (e.state === 'stopping') stopping.add(key);
    // Its next generation: a failure is one again.
    if (e.state === 'pending' || e.state === 'starting') stopping.delete(key);
    if (stopping.has(key)) return false;
    // 'failed': a rank whose generation it ended (its status in `code`), or whose launch failed.
    return e.state === 'failed' || (e.state === 'exited' && e.code !== undefined && e.code !== null && e.code !== 0);
  };
}

/** A stream that writes `prefix` before every line to `to` (an agent's output says which node it is from). */
export function prefixLines(to: NodeJS.WritableStream, prefix: string): NodeJS.WritableStream {
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
