import { describeAssigned, parsePortsFlag } from '../../allocate/port-set.js';
import { EXIT } from '../../errors.js';
import { readSysctls } from '../../host/sysctl.js';
import { hostPort } from '../../launch/probe-host.js';
import { launch, signalNumber } from '../../launch/launch.js';
import { checkReadyWithHandoff, parseReadySpec } from '../../launch/ready-spec.js';
import { compilePattern, type LearnEntry } from '../../launch/learn.js';
import type { Handoff, LaunchOptions } from '../../launch/launch-api.js';
import { parseCommandArgs, usage, type Command } from '../command.js';
import { procRoot } from '../env.js';
import { eventsFdNumber, sendEvent } from '../events-fd.js';
import { withSignals } from '../signals.js';
import { resolveSource, SOURCE_HELP, sourceOptions } from '../source.js';
import { DEADLINE, GRACE } from '../../util/duration.js';
import { parseDurationArg, parsePathArg } from '../values.js';

const help = `Usage: berth run [SOURCE | --port learn [--learn REGEX]] [--ports SPEC] [--bind HOST] [--env NAME] [--handoff release|fd]
                 [--ready SPEC] [--ready-timeout DUR] [--ready-file F] [--diag-dir DIR]
                 [--name NAME] [--stop-grace DUR] [--allow-ephemeral] [--udp] [--strict] [--json]
                 [--events-fd N] [--stop-on-stdin-eof] -- CMD ARG…

Lease and hold a port, start CMD on it, wait until CMD's process tree owns the port and
is ready, then supervise it: its output passes through unchanged, SIGINT/SIGTERM/SIGHUP
are forwarded to its process group, and berth exits with its status (128+N for signal N).
A signal before CMD is ready stops it instead: exit 128+N, with a one-line reason. If berth
itself dies (kill -9, the OOM killer), its watchdog stops CMD's whole tree at once (TERM,
then KILL after --stop-grace). A closed stdout/stderr (| head -1) only ends that output.
No connection is made to the port before the service owns it, so a readiness probe can
never take the port as its own source port.

CMD is run directly (no shell). In its arguments {port} becomes the port and {host} the
--bind address (default 127.0.0.1); PORT (or --env NAME), BERTH_PORT, BERTH_NAME and
BERTH_RUN_ID are set (BERTH_RUN_ID marks the whole process tree, daemons included).

--ports SPEC leases a named set instead of one port, all or none, from the same SOURCE:
NAME (one port), NAME=block:N (N contiguous ports, leased for CMD's life and never held:
CMD binds inside them itself), NAME=window (the --instance window less the other ports),
comma-separated, e.g. --ports http,dist=block:32. The first must be one port: it is the
primary ({port}, PORT, ownership, --ready). In CMD and --ready, {ports.NAME} is the port
(a block's first), {ports.NAME.first|last|range|count} a block's parts (range: LO-HI);
BERTH_PORT_<NAME> is set for each (and _FIRST, _LAST, _COUNT for a block).

Once ready, and every few seconds after, berth compares what CMD's tree listens on with
its ports (all of them; without --ports, the one port). A listener outside them is
reported once per port (a warning line; with --json also an "audit" object): inside the
unreserved ephemeral range any outgoing connection may take that port, outside it
another allocator may hand it out.

Foreign listeners: at readiness and on the same turns, berth looks at every LISTEN socket
on CMD's ports (the port; with --ports every single port and the block ports CMD listens
on), both families, any address. One held by a process outside CMD's tree (a second server
of the same uid in its SO_REUSEPORT group, which the kernel splits connections with, or a
listener on the other family's loopback: [::1]:P beside 127.0.0.1:P) is foreign: before
ready CMD is not ready and berth exits 69 naming it (pid, uid, command, address); after
ready it is one warning line (with --json also a "foreign" object), or with --strict a
failure: CMD is stopped and berth exits 70.

${SOURCE_HELP}
  --allow-ephemeral            allow ports inside the unreserved ephemeral range
  --udp                        CMD uses the port's UDP side too (a TURN, DNS or QUIC server):
                               berth holds it on UDP as well until CMD starts (no port with
                               any UDP socket is handed out, with or without --udp); with
                               --ports, the first (primary) port

Options:
  --handoff release  (default) berth closes its hold right before starting CMD, which binds
                     the port itself; berth then checks that CMD's tree, not a stranger,
                     listens on it (a stranger: exit 69 "stolen").
  --handoff fd       the held listening socket becomes CMD's fd 3 (blocking, as systemd
                     passes it) with LISTEN_FDS=1, LISTEN_PID=<CMD's pid>, LISTEN_FDNAMES=NAME:
                     gunicorn with no --bind (it reads LISTEN_FDS itself), uvicorn --fd 3,
                     hypercorn --bind fd://3, Node listen({fd: 3}), Python
                     socket.socket(fileno=3). No gap at all.
                     It listens on --bind only (default 127.0.0.1) with backlog somaxconn.
                     With --ports, every single port is its own fd: 3, 4, … in --ports
                     order, LISTEN_FDS=N, LISTEN_FDNAMES=NAME1:NAME2 (blocks are never fds).
  --ready SPEC       after ownership, poll until ready (10ms backing off to 250ms):
                       http://HOST:{port}/PATH  a GET answers 2xx (localhost is probed as
                                                127.0.0.1 or ::1, whichever CMD listens on)
                       tcp                      a TCP connect succeeds (not with --handoff fd:
                                                the kernel accepts into the backlog before CMD
                                                calls accept(), so it proves nothing)
                       cmd:COMMAND              COMMAND exits 0; run with /bin/sh -c since it is
                                                your own shell text; {port} is replaced, PORT set
                     Without --ready, owning the port is ready.
  --ready-timeout D  give up after D (default 10m; more than 0, at most 596h): exit 75
  --ready-file F     when ready, write {name, host, port, pid, readyAt, waitedMs} to F
                     atomically (F is removed first, so a waiter never sees an old one)
  --diag-dir DIR     the run folder: stdout.log and stderr.log as the run goes, and
                     diagnostics.json on failure (default: a private folder under the state
                     directory, removed after a clean run, kept on failure); created 0700
                     or private already, and holding no earlier run (one folder, one run)
  --bind HOST        the address CMD should listen on ({host}, BERTH_HOST); berth probes it
  --env NAME         also export the port as NAME instead of PORT
  --name NAME        label for messages and the lease (default: CMD's basename)
  --stop-grace D     after forwarding SIGTERM/SIGINT, SIGKILL the group after D (default 10s;
                     at most 596h)
  --strict           a foreign listener on CMD's ports after ready stops CMD: exit 70
  --json             berth's own lines on stderr (ready, warnings) as JSON objects
  --events-fd N      also write berth's messages as JSON lines to file descriptor N (opened
                     by the caller: 3>events.jsonl, Python's pass_fds), a channel no service
                     output can reach: {"event":"ready",name,host,port,pid,…}, "warning",
                     "write-failed", "audit", "foreign", "stopped", "exited", and last
                     {"event":"exit","exitCode":N} or {"event":"error","error":{exitCode,
                     message,…}} (the --json error document). stdout and stderr are unchanged.
  --stop-on-stdin-eof
                     stop the service (as on SIGTERM) when berth's stdin reaches EOF (its
                     parent is gone); the service's stdin is then /dev/null

--port learn: CMD chooses its own port (binds port 0, or picks one): nothing is leased
before it starts. The port is learned once CMD's own process tree listens on it, and then
leased to it until it ends (another allocator is refused with 69 naming the lease); --ready
probes it ({port}), and the ready line, --ready-file and --json carry it. With one listener
that is the port; with several, --learn REGEX (one group for the port, over CMD's stdout and
stderr lines) says which, and a port is learned only where a matching line and a listener of
the tree agree. {port} cannot be in CMD itself (it is not known before CMD runs). A learned
port inside the ephemeral range is allowed (a bound port is never a connect() source) and the
ready line says so. No listener before --ready-timeout: exit 75 naming what it listened on.

When ready, one line on stderr: berth: NAME ready on HOST:PORT pid N after 1.23s
(with --ports, the set follows: (http 20000, dist 20001-20032)).

Examples:
  berth run --handoff fd --ready http://127.0.0.1:{port}/ -- python3 -c 'import http.server as h, socket
s = h.HTTPServer(("", 0), h.SimpleHTTPRequestHandler, False); s.socket = socket.socket(fileno=3); s.serve_forever()'
  berth run --ready http://127.0.0.1:{port}/ -- python3 -m http.server {port} --bind 127.0.0.1
  berth run --layout layout.yaml --band engines --instance 0 --ready http://127.0.0.1:{port}/health \\
      --ready-file engine0.json -- vllm serve my-model --port {port}
  berth run --port 8000 --ready "cmd:grpc_health_probe -addr 127.0.0.1:{port}" -- ./server

  # vLLM: the API port, and a block for the internal ports it scans upward from VLLM_PORT
  berth run --ports http,dist=block:32 --ready http://127.0.0.1:{ports.http}/health -- \\
      env VLLM_PORT={ports.dist} vllm serve MODEL --port {ports.http}

  # SGLang: HTTP, NCCL and dist-init ports of one server
  berth run --ports http,nccl,dist --ready http://127.0.0.1:{ports.http}/health -- \\
      python -m sglang.launch_server --model-path MODEL --port {ports.http} \\
      --nccl-port {ports.nccl} --dist-init-addr 127.0.0.1:{ports.dist}

  # Ray head: the GCS port, the dashboard, and the worker port range from one set
  berth run --ports gcs,dashboard,workers=block:1000 -- ray start --head --block \\
      --port {ports.gcs} --dashboard-port {ports.dashboard} \\
      --min-worker-port {ports.workers.first} --max-worker-port {ports.workers.last}

  # a server that binds port 0 and prints where it listens: the port is learned
  berth run --port learn --ready http://127.0.0.1:{port}/ -- python3 -m http.server 0 --bind 127.0.0.1
  berth run --port learn --learn 'Uvicorn running on http://[^:]+:(\\d+)' -- ./serve.sh

  # two named sockets handed over as fds 3 and 4 (LISTEN_FDS=2, LISTEN_FDNAMES=http:grpc)
  berth run --handoff fd --ports http,grpc --ready http://127.0.0.1:{ports.http}/ -- ./server

Exit codes: CMD's own status once it was ready (128+N for signal N); 128+N when berth got
signal N before CMD was ready; 64 usage (also: CMD cannot be started, a --diag-dir that
already holds a run, a bad --ports or a {ports.NAME} that names no port of it); 65 invalid
layout file; 69 no usable port or set (busy, exhausted, stolen before CMD bound it, or a foreign listener
on its ports at readiness); 70 CMD failed before it was ready (or, with --strict, a foreign
listener after ready);
74 cannot write logs, diagnostics or the ready file; 75 readiness deadline passed. On 69, 70
and 75 the message names the diagnostics folder.`;

/** `--port learn [--learn REGEX]`: the service chooses its port; no other source or set goes with it. */
function learnOption(values: Record<string, unknown>): LearnEntry[] | undefined {
  const learned = values.port === 'learn';
  if (!learned && values.learn === undefined) return undefined;
  if (!learned) throw usage('run', `--learn ${JSON.stringify(values.learn)} is the pattern of a learned port: give --port learn with it`);
  const other = ['range', 'layout', 'band', 'instance', 'source', 'ports'].find((k) => values[k] !== undefined);
  if (other !== undefined) throw usage('run', `--port learn: the service chooses its port, so --${other} has nothing to give it; drop one of the two`);
  const pattern = values.learn as string | undefined;
  if (pattern !== undefined) {
    const re = compilePattern(pattern);
    if (typeof re === 'string') throw usage('run', `--learn ${JSON.stringify(pattern)} ${re}`);
  }
  return [{ name: 'port', ...(pattern !== undefined ? { pattern } : {}) }];
}

export const runCommand: Command = {
  help,
  async run(argv) {
    const dd = argv.indexOf('--');
    if (dd < 0) throw usage('run', 'put the command after --, e.g. berth run --ready http://127.0.0.1:{port}/ -- python3 -m http.server {port}');
    const own = argv.slice(0, dd);
    const command = argv.slice(dd + 1);
    const { values, positionals } = parseCommandArgs(
      'run',
      own,
      {
        ...sourceOptions,
        bind: { type: 'string' },
        env: { type: 'string' },
        handoff: { type: 'string' },
        ready: { type: 'string' },
        'ready-timeout': { type: 'string' },
        'ready-file': { type: 'string' },
        'diag-dir': { type: 'string' },
        name: { type: 'string' },
        ports: { type: 'string' },
        learn: { type: 'string' },
        'stop-grace': { type: 'string' },
        json: { type: 'boolean' },
        strict: { type: 'boolean' },
        udp: { type: 'boolean' },
        'stop-on-stdin-eof': { type: 'boolean' },
        'events-fd': { type: 'string' },
      },
      true,
    );
    // Checked by main.ts before anything was opened (events-fd.ts).
    const events = eventsFdNumber(values['events-fd']);
    if (positionals.length > 0) throw usage('run', `put the command after --, e.g. berth run --port 8000 -- ${positionals.join(' ')}`);
    if (command.length === 0) throw usage('run', 'no command: put it after --, e.g. berth run -- python3 -m http.server {port}');
    const handoff = values.handoff ?? 'release';
    if (handoff !== 'release' && handoff !== 'fd') throw usage('run', `--handoff ${handoff}: expected release or fd`);
    if (values.env !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(values.env))
      throw usage('run', `--env ${JSON.stringify(values.env)}: not an environment variable name`);
    let ready;
    try {
      ready = values.ready === undefined ? undefined : parseReadySpec(values.ready);
      checkReadyWithHandoff(ready, handoff);
    } catch (e) {
      throw usage('run', (e as Error).message);
    }
    const root = procRoot();
    const learn = learnOption(values);
    const opts: LaunchOptions = {
      command,
      ...(learn ? { learn } : { source: await resolveSource('run', values, readSysctls(root)) }),
      handoff: handoff as Handoff,
      procRoot: root,
      // berth reads its stdin for EOF itself then: the service gets none.
      stdin: values['stop-on-stdin-eof'] === true ? 'ignore' : 'inherit',
    };
    if (ready !== undefined) opts.ready = ready;
    if (values['allow-ephemeral']) opts.allowEphemeral = true;
    if (values.strict) opts.strict = true;
    if (values.udp) opts.udp = true;
    if (values.bind !== undefined) opts.bind = values.bind;
    if (values.env !== undefined) opts.envName = values.env;
    if (values.name !== undefined) opts.name = values.name;
    if (values.ports !== undefined) opts.ports = parsePortsFlag(values.ports);
    if (values['ready-timeout'] !== undefined) opts.readyTimeoutMs = parseDurationArg('run', '--ready-timeout', values['ready-timeout'], DEADLINE);
    if (values['stop-grace'] !== undefined) opts.stopGraceMs = parseDurationArg('run', '--stop-grace', values['stop-grace'], GRACE);
    if (values['ready-file'] !== undefined) opts.readyFile = parsePathArg('run', '--ready-file', values['ready-file']);
    if (values['diag-dir'] !== undefined) opts.diagDir = parsePathArg('run', '--diag-dir', values['diag-dir']);
    const json = values.json === true;
    // One message three ways: a line on stderr (JSON with --json; `text` '' has no plain line) and the --events-fd object.
    const say = (text: string, obj: Record<string, unknown>) => {
      if (json || text !== '') process.stderr.write((json ? JSON.stringify(obj) : `berth: ${text}`) + '\n');
      sendEvent(events, obj);
    };
    const learnedEphemeral = new Set<number>();
    opts.onEvent = (e) => {
      if (e.type === 'learned') for (const p of e.ephemeral) learnedEphemeral.add(p);
      if (e.type === 'warning') say(`warning: ${e.message}`, { event: 'warning', message: e.message });
      else if (e.type === 'write-failed')
        say(`${e.message}; berth will exit 74 unless the service fails otherwise`, { event: 'write-failed', path: e.path, error: e.error, message: e.message });
      // The audit's findings came as warning lines already; JSON readers also get them whole.
      else if (e.type === 'audit' || e.type === 'foreign') say('', { event: e.type, listeners: e.listeners });
    };

    const handle = launch(opts);
    let isReady = false;
    /** A signal that came before the service was ready: berth stops it and exits 128+N, as `berth up` does. */
    let early: NodeJS.Signals | undefined;
    let parentGone = false;
    const onSignal = (sig: NodeJS.Signals, cause?: 'stdin-eof') => {
      if (cause === 'stdin-eof' && !parentGone) {
        parentGone = true;
        say(`stdin reached EOF: the parent that started berth went away; stopping ${handle.name}`, { event: 'parent-gone', name: handle.name });
      }
      // Once ready, TERM/INT end the service (forward, then KILL after the grace) and HUP is
      // only passed on (a reload); before, any of them is an orderly stop.
      if (sig === 'SIGHUP' && isReady) return handle.signal(sig);
      if (!isReady) early ??= sig;
      // A starting service is told to stop, not to reload.
      void handle.stop({ signal: sig === 'SIGHUP' ? 'SIGTERM' : sig });
    };
    handle.ready.then(
      (r) => {
        isReady = true;
        const set = r.ports && !(r.learned && r.ports.length === 1) ? ` (${r.ports.map((a) => `${a.name} ${describeAssigned(a)}`).join(', ')})` : '';
        const learned = r.learned ? ` (learned${learnedEphemeral.size > 0 ? `; ${[...learnedEphemeral].join(', ')} in the ephemeral range` : ''})` : '';
        say(`${r.name} ready on ${hostPort(r.host, r.port)} pid ${r.pid} after ${(r.waitedMs / 1000).toFixed(2)}s${set}${learned}`, {
          event: 'ready',
          ...r,
          ...(learnedEphemeral.size > 0 ? { ephemeral: [...learnedEphemeral] } : {}),
        });
      },
      () => {},
    );
    const end = await withSignals(onSignal, () => handle.exited, { stdinEof: values['stop-on-stdin-eof'] === true });
    if (end.error) throw end.error;
    if (early !== undefined && !end.ready) {
      const status = 128 + signalNumber(early);
      const by = parentGone && early === 'SIGTERM' ? 'because the parent went away (stdin EOF)' : `by ${early}`;
      say(`stopped ${by} before ${handle.name} was ready; service stopped, exit ${status}`, {
        event: 'stopped',
        signal: early,
        status,
        ...(parentGone ? { cause: 'stdin-eof' } : {}),
      });
      return status;
    }
    if (end.ready && end.exitCode !== 0 && end.bundle) {
      say(`${handle.name} exited with status ${end.exitCode}; logs and diagnostics: ${end.runDir}`, {
        event: 'exited',
        status: end.exitCode,
        runDir: end.runDir,
      });
    }
    // Its logs could not be written (a full disk): no clean run, though the service ended well.
    if (end.exitCode === 0 && end.writeFailed) return EXIT.IOERR;
    return end.exitCode;
  },
};
