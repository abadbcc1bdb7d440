import { BerthError, EXIT } from '../../errors.js';
import { launch } from '../../launch/launch.js';
import type { LaunchEvent, LaunchOptions, ReadySpec } from '../../launch/launch-api.js';
import { portSetEnv, type PortEntry } from '../../allocate/port-set.js';
import type { LearnEntry } from '../../launch/learn.js';
import { rankEnv, rankOf } from '../file/ranks.js';
import type { SharedPorts } from './stack-handle.js';
import { resolveCommand, resolveTemplate } from '../file/fill-placeholders.js';
import type { ReplicaContext } from '../file/replica-context.js';
import type { Endpoint } from '../file/endpoint.js';
import { oneShotFix } from '../file/one-shot.js';
import { replicaDirPath } from '../file/replica-dir-path.js';
import { dirsNamed, makeReplicaDir, renderReplicaTemplates } from './replica-dir.js';
import type { Happened } from './happened.js';
import { endAbandoned, firstLine, generationOf, type Replica, type Service } from './replica.js';
import { onRunnerEvent, onRunnerExited } from './replica-events.js';
import type { StackRun } from './stack-run.js';

/*
 * One attempt of one replica: placeholders filled from the dependencies' endpoints as they
 * are now, then one launch(). Its events and exit go to replica-events.ts, tagged with the
 * attempt so a late one is ignored.
 */

/** launch()'s messages name a stack's keys, not the CLI's flags ("not ready after 5.0s (ready_timeout)"). */
const STACK_KEYS: Readonly<Record<string, string>> = {
  '--ready-timeout': 'ready_timeout',
  '--stop-grace': 'stop_grace',
  '--bind': 'host',
  '--ready': 'ready',
  '--ports': 'ports',
};

/** A service's replicas that have a port, as they are now. */
const endpointsOf = (st: StackRun, svc: Service): Endpoint[] =>
  svc.replicas
    .filter((r) => r.port !== undefined)
    .map((r) => {
      const { node, nodeRank } = rankOf(svc.spec, r.index, svc.replicas.length, st.topology);
      const ports = [...(r.set?.assigned ?? []), ...r.learned];
      return { host: r.host, port: r.port!, ...(ports.length > 0 ? { ports } : {}), scheme: svc.spec.scheme, node, nodeRank };
    });

/** The endpoints of the services this one depends on (and its own replicas), as they are now. */
export function resolveContext(st: StackRun, rep: Replica): ReplicaContext {
  const endpoints = new Map<string, Endpoint[]>();
  for (const d of rep.svc.spec.dependsOn) {
    const dep = st.byName.get(d.service);
    if (!dep) {
      const ext = st.external.get(d.service);
      // Another node's replicas: their URLs in their service's scheme.
      const scheme = st.spec.services.find((x) => x.name === d.service)?.scheme;
      if (ext) endpoints.set(d.service, ext.endpoints.map((e) => (scheme === undefined ? e : { ...e, scheme })));
      continue;
    }
    endpoints.set(d.service, endpointsOf(st, dep));
  }
  // Its own replicas (peers: an etcd member's --initial-cluster): every port is leased before any starts.
  // A `nodes:` service's agent gives every node's (st.peers, node order): this host's are among them.
  const peers = st.peers.get(rep.svc.spec.name)?.map((e) => ({ ...e, scheme: rep.svc.spec.scheme })) ?? endpointsOf(st, rep.svc);
  if (peers.length > 0) endpoints.set(rep.svc.spec.name, [...peers]);
  // Every service's shared ports are in the run's record: leased here or given (reserve-ports.ts),
  // or a `nodes:` service's, mirrored by the coordinator from its first node.
  const sharedOf = new Map<string, SharedPorts>();
  for (const name of [...rep.svc.spec.dependsOn.map((d) => d.service), rep.svc.spec.name]) {
    const sp = st.run.shared[name];
    if (sp) sharedOf.set(name, sp);
  }
  const ctx: ReplicaContext = {
    name: rep.svc.spec.name,
    replica: rep.index,
    replicas: rep.svc.replicas.length,
    host: rep.svc.spec.host,
    scheme: rep.svc.spec.scheme,
    endpoints,
    sharedOf,
    rank: { ...rankOf(rep.svc.spec, rep.index, rep.svc.replicas.length, st.topology), generation: rep.svc.generation },
  };
  if (rep.port !== undefined && rep.svc.spec.ports[0]?.kind !== 'learn') ctx.port = rep.port;
  const learned = rep.svc.spec.ports.filter((e) => e.kind === 'learn').map((e) => e.name);
  if (learned.length > 0) ctx.learned = new Set(learned);
  const shared = rep.svc.shared;
  if (rep.set || shared) ctx.ports = [...(rep.set?.assigned ?? []), ...(shared?.assigned ?? [])];
  // Its own learned ports are known only once it runs: nothing of them here (load.ts refuses naming them).
  if (shared) ctx.sharedHosts = new Map(shared.assigned.map((a) => [a.name, shared.host]));
  if (rep.gpu) ctx.gpu = rep.gpu.gpu;
  return ctx;
}

/** The `learn` entries of a set, as launch() takes them. */
function learnOf(entries: readonly PortEntry[]): LearnEntry[] {
  return entries.flatMap((e) => (e.kind === 'learn' ? [{ name: e.name, ...(e.pattern !== undefined ? { pattern: e.pattern } : {}) }] : []));
}

export function startAttempt(st: StackRun, rep: Replica): void {
  if (st.ending) return endAbandoned(rep);
  const s = rep.svc.spec;
  const attempt = rep.attempt;
  const diagDir = st.run.diagDir(s.name, rep.index, attempt, generationOf(rep));
  rep.diag.push({ dir: diagDir, keep: false });
  rep.attemptFailed = false;
  rep.stopAsked = false;
  // A new attempt learns its ports anew (the program may choose others).
  const learn = learnOf(s.ports);
  if (learn.length > 0) {
    rep.learned = [];
    if (s.ports[0]?.kind === 'learn') rep.port = undefined;
  }
  let command: string[];
  let env: NodeJS.ProcessEnv;
  let ready: ReadySpec | undefined;
  let files: NonNullable<LaunchOptions['files']> = [];
  let ctxDir: string;
  const shared = rep.svc.shared;
  try {
    const ctx = resolveContext(st, rep);
    ctx.dir = ctxDir = makeReplicaDir(st.run.path, s, rep.index);
    // {db.dir} in a setup step (initdb -D {db.dir}/data): db's directories exist before it runs.
    for (const name of dirsNamed(s)) for (const r of st.byName.get(name)?.replicas ?? []) makeReplicaDir(st.run.path, r.svc.spec, r.index);
    ctx.dirs = new Map(st.services.map((x) => [x.spec.name, x.replicas.map((r) => replicaDirPath(st.run.path, x.spec.name, r.index))]));
    const rendered = renderReplicaTemplates(s, ctx, ctxDir);
    files = rendered.map((r, i) => ({ name: s.templates[i]!.name, source: r.source, path: r.path }));
    ctx.templates = new Map(files.map((f) => [f.name, f.path]));
    command = resolveCommand(s.command, ctx);
    env = { ...st.env };
    if (rep.gpu) {
      // The GPU as the job sees it; the service's own env: may still override it.
      env.CUDA_VISIBLE_DEVICES = rep.gpu.cudaVisibleDevices;
      env.BERTH_GPU = String(rep.gpu.gpu);
    }
    // Before the service's own env: it may rename them (RANK: "{rank}" is the same value).
    Object.assign(env, rankEnv(ctx.rank!));
    if (shared) Object.assign(env, portSetEnv(shared.assigned));
    for (const [k, v] of Object.entries(s.env)) env[k] = resolveTemplate(v, ctx);
    env.BERTH_SERVICE = s.name;
    env.BERTH_REPLICA = String(rep.index);
    env.BERTH_RUN_DIR = st.run.path;
    env.BERTH_REPLICA_DIR = ctx.dir;
    if (s.ready?.kind === 'http') ready = { kind: 'http', url: resolveTemplate(s.ready.url, ctx) };
    else if (s.ready?.kind === 'cmd') ready = { kind: 'cmd', command: resolveTemplate(s.ready.command, ctx) };
    else ready = s.ready;
  } catch (e) {
    const err = e instanceof BerthError ? e : new BerthError(EXIT.SOFTWARE, String(e));
    st.update(rep, { state: 'failed', code: err.exitCode, detail: firstLine(err.message) });
    rep.final = true;
    rep.markEnded();
    st.failStack(rep, err.exitCode, err.message);
    return;
  }
  const onEvent = (e: LaunchEvent) => passOn(st, () => onRunnerEvent(st, rep, attempt, e));
  const logs = st.logsOf(rep);
  // Placeholders are the stack's own (resolved above, `{{port}` a literal `{port}`): launch
  // takes command and ready as they are. The replica's logs are launch's logs.
  const lo: LaunchOptions = {
    command,
    substitute: false,
    name: rep.label,
    env,
    cwd: s.cwd,
    diagDir,
    stdoutLog: logs.out,
    stderrLog: logs.err,
    stopGraceMs: s.stopGraceMs,
    stdout: rep.out.idle ? null : rep.out,
    stderr: rep.err.idle ? null : rep.err,
    onEvent,
    procRoot: st.procRoot,
    ...(files.length > 0 ? { files } : {}),
    dir: ctxDir,
    // A one-shot step's exit 0 is its completion, ready or not; a server's the fix to name.
    ...(s.oneShot ? { oneShot: true } : { exitZeroHint: oneShotFix(s.name) }),
    ...(shared ? { sharedPorts: shared.assigned } : {}),
    ...((s.strays ?? []).length > 0 ? { strays: s.strays } : {}),
    ...(s.strict ? { strict: true } : {}),
    onAuditWarning: (found, message) => {
      if (attempt === rep.attempt) st.sharedStrays.add(rep, found, message);
    },
    ...(shared?.set ? { leasesHeld: shared.set.reservations } : {}),
  };
  if (learn.length > 0) {
    lo.learn = learn;
    if (s.ports[0]?.kind === 'learn') lo.learnPrimary = true;
    lo.bind = s.host;
  }
  if (rep.set) {
    // launch() hands the singles over (closing their holds) but the leases stay the
    // stack's: a restart comes back on the same ports, teardown gives them back.
    // Without `ports:` it is the one-port launch it always was (no BERTH_PORT_PORT, one fd).
    if (s.portsDeclared) lo.portSet = rep.set;
    else lo.reservation = rep.set.reservations[0]!;
    lo.keepReservation = true;
    lo.bind = s.host;
    lo.handoff = s.handoff;
  } else if (learn.length === 0) {
    // No port (typically the job, a client): spawned is started, or the probe says ready.
    lo.portless = true;
  }
  if (ready) lo.ready = ready;
  lo.optionNames = STACK_KEYS;
  if (s.readyTimeoutMs !== undefined) lo.readyTimeoutMs = s.readyTimeoutMs;
  if (st.o.probeTimeoutMs !== undefined) lo.probeTimeoutMs = st.o.probeTimeoutMs;
  if (st.o.stateDir !== undefined) lo.stateDir = st.o.stateDir;
  // Replica 0 binds the shared ports itself: their holds close right before it starts
  // (the leases stay the stack's, so no other allocator hands them out meanwhile).
  const held = rep.index === 0 ? shared?.set : undefined;
  if (held && !rep.sharedReleased) {
    rep.sharedReleased = true;
    void Promise.all(held.reservations.map((r) => r.unhold())).then(
      // Its generation may have ended meanwhile (another rank failed at once): not started.
      () => (st.ending ? endAbandoned(rep) : attempt === rep.attempt && !rep.generationStop ? run(st, rep, attempt, lo) : undefined),
      (e) => st.internalError(e),
    );
    return;
  }
  run(st, rep, attempt, lo);
}

function run(st: StackRun, rep: Replica, attempt: number, lo: LaunchOptions): void {
  const runner = launch(lo);
  rep.runner = runner;
  void runner.exited.then((info) => passOn(st, () => onRunnerExited(st, rep, attempt, info)));
}

/** What a runner's event or exit made happen, to next.ts; a throw is a bug in berth. */
function passOn(st: StackRun, happened: () => Happened | undefined): void {
  try {
    const h = happened();
    if (h) st.next(h);
  } catch (err) {
    st.internalError(err);
  }
}
