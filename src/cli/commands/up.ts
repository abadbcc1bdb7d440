import { resolve } from 'node:path';
import { BerthError, EXIT } from '../../errors.js';
import { watchdogMain } from '../../launch/watchdog/index.js';
import { loadStack } from '../../stack/file/load.js';
import { planNodes, runAgent, runMultiNodeStack } from '../../stack/multi-node/index.js';
import { runStack, type RunStackOptions } from '../../stack/run/orchestrate.js';
import { markRunGone } from '../../stack/record/run-gone.js';
import { shownPath } from '../../stack/file/shown-path.js';
import { formatFailure, formatStackReady } from '../../stack/record/stack-messages.js';
import { parseCommandArgs, usage, type Command } from '../command.js';
import { procRoot } from '../env.js';
import { eventsFdNumber, sendEvent } from '../events-fd.js';
import { withSignals } from '../signals.js';
import { parsePathArg } from '../values.js';

const help = `Usage: berth up STACK [--run-dir DIR] [--follow] [--json] [--events-fd N] [--stop-on-stdin-eof]

Start every service of a stack file: ports for all replicas are leased and held first (a
stack that cannot have them all starts nothing, exit 69), then each service starts as soon
as the services it depends on meet their condition (started, ready, completed); services
that do not wait for each other start together. Every replica is a 'berth run': same
handoff, ownership check, readiness probe and diagnostics. Placeholders such as
{engine.urls} are filled from the real endpoints of the services depended on.

While it runs: a live table of replicas on a terminal (service, replica, port, pid, state,
time in state), one line per state change otherwise (a Slurm log, a pipe); NO_COLOR is
respected. Once every service except the job is ready, "stack ready" and one line per
replica with its url. The job's stdout and stderr pass through unchanged; other services
write only to their log files unless --follow or "logs: attach".

Run directory (default ./berth-runs/<UTC timestamp>, private):
  endpoints.json          every replica's host, port, url, pid, state, ports; replaced atomically
                          on every change (BERTH_RUN_DIR tells the services where it is)
  events.jsonl            every state change: t, service, replica, state, pid, port, code, detail
  logs/SERVICE-R.out|err  complete output of replica R (all restarts, flushed at exit)
  diagnostics/SERVICE-R/  diagnostics.json, stdout.log, stderr.log of a failed replica

The stack ends when:
  - the job (job: true) exits: the rest is stopped, berth exits with the job's status;
  - a service fails before it is ready, or a ready one dies with no restart left: the rest
    is stopped and berth exits 69 (no port), 70 (it failed or died) or 75 (not ready in
    time), naming the replica, its diagnostics, its logs and its last stderr lines;
  - berth gets SIGINT, SIGTERM or SIGHUP: the same orderly teardown, exit 128+N (130 for
    Ctrl-C, 143 for SIGTERM, 129 for SIGHUP); a second signal kills everything at once;
  - without a job, every service has exited 0 (exit 0). Otherwise it runs until signalled.
Teardown: dependents first, latest started first; SIGTERM, then SIGKILL after the
service's stop_grace (default 10s). If berth itself dies (kill -9, the OOM killer), its
watchdog (a small process of its own; --watchdog PID is that, not for use by hand) sends
every service SIGTERM at once, SIGKILL after its stop_grace, and marks endpoints.json
"ended". A closed stdout or stderr (| head -1) only ends berth's output there.

Options:
  --run-dir DIR   the run directory (may exist, but must be private and hold no run)
  --follow        stream every service's output on stderr, lines prefixed "service/replica | "
  --json          when the stack is ready, print endpoints.json's document on stdout as one
                  line (before the job starts, so it comes before the job's output)
  --events-fd N   also write berth's messages as JSON lines to file descriptor N (opened by
                  the caller: 3>events.jsonl, Python's pass_fds), a channel no service output
                  can reach: {"event":"ready","endpoints":{…endpoints.json}}, every state
                  change {"event":"state",…the events.jsonl line}, {"event":"warning",
                  "message"}, {"event":"message","text"} (berth's status messages), and last
                  {"event":"exit","exitCode":N} or {"event":"error","error":{exitCode,
                  message,…}} (the --json error document). stdout and stderr are unchanged.
  --stop-on-stdin-eof
                  stop the stack (as on SIGTERM) when berth's stdin reaches EOF: a parent
                  that holds a pipe to it open (the Python client) is gone, however it died

Each service's environment also has BERTH_SERVICE, BERTH_REPLICA and BERTH_RUN_DIR (and,
with a port, PORT, BERTH_PORT, BERTH_HOST as in 'berth run').

Several ports per replica ("ports:" in the stack file, docs/stack.md): named single ports
and blocks of contiguous ports, e.g. ports: { http: 1, dist: { block: 32 } } with
command: [vllm, serve, M, --port, "{ports.http}"] and env: { VLLM_PORT: "{ports.dist}" }.
A block is leased to its replica for its whole life but never held (the program binds in
it); every port also arrives as BERTH_PORT_<NAME>; {engine.ports.http} gives every
replica's. A restarted replica comes back on the same ports, or fails with 69 naming who
took one. Listeners outside a replica's ports are warned about once (endpoints.json too).

Under Slurm (docs/slurm.md): "replicas: gpus" starts one replica per GPU of the job, the one
on GPU g in window g of its band, with {gpu} and CUDA_VISIBLE_DEVICES set. Services with
"nodes: all" (or N, or others: every node but the first) run on the nodes of a multi-node
allocation: berth up starts one agent per node with srun (--agent DIR is that agent, not for
use by hand); their logs, node files and diagnostics are under RUN_DIR/nodes/, and every
node's replicas are in RUN_DIR/endpoints.json, --json and the status view as
SERVICE/REPLICA@NODE (--follow streams their output too, prefixed with the node).

Examples:
  berth up examples/demo/stack.yaml
  berth up stack.yaml --run-dir "$SLURM_SUBMIT_DIR/runs/$SLURM_JOB_ID" --follow
  berth up servers.yaml --json | head -1 > endpoints.json &   # no job: runs until signalled

Exit codes: the job's status; 0 when the stack was stopped by no one and every service
completed; 64 usage (also a --run-dir that already holds a run,
or a multi-node stack where Slurm's srun or scontrol is not on PATH); 65 invalid stack
(file:line for every problem); 69 no usable port;
70 a service failed; 74 cannot write the run directory; 75 readiness deadline passed;
128+N stopped by signal N.`;

export const upCommand: Command = {
  help,
  async run(argv) {
    const { values, positionals } = parseCommandArgs(
      'up',
      argv,
      {
        'run-dir': { type: 'string' },
        follow: { type: 'boolean' },
        json: { type: 'boolean' },
        'stop-on-stdin-eof': { type: 'boolean' },
        'events-fd': { type: 'string' },
        agent: { type: 'string' },
        watchdog: { type: 'string' },
      },
      true,
    );
    // The watchdog of a berth process (launch/watchdog/program.ts starts it this way in the single executable).
    if (values.watchdog !== undefined) return watchdogMain(Number(values.watchdog), markRunGone);
    const runDir = values['run-dir'] === undefined ? undefined : parsePathArg('up', '--run-dir', values['run-dir']);
    // Checked by main.ts before anything was opened (events-fd.ts).
    const events = eventsFdNumber(values['events-fd']);
    if (positionals.length === 0) throw usage('up', 'no stack file given, e.g. berth up examples/demo/stack.yaml');
    if (positionals.length > 1) throw usage('up', `one stack file at a time (got ${positionals.length}: ${positionals.join(' ')})`);
    const spec = loadStack(positionals[0]!);
    // A node's agent of a multi-node stack (started by berth up itself through srun).
    if (values.agent !== undefined) return runAgent(spec, { runDir: values.agent, procRoot: procRoot(), follow: values.follow === true });
    const json = values.json === true;
    const jobs = new Set(spec.services.filter((s) => s.job).map((s) => s.name));

    const started = performance.now();
    const plan = planNodes(spec);
    const opts: RunStackOptions = {
      ...(runDir !== undefined ? { runDir } : {}),
      follow: values.follow === true,
      status: 'auto',
      procRoot: procRoot(),
      onReady: (doc) => {
        if (json) process.stdout.write(JSON.stringify(doc) + '\n');
        sendEvent(events, { event: 'ready', endpoints: doc });
        handle.say(formatStackReady(doc, { skip: jobs, readyMs: performance.now() - started }));
      },
      onEvent: (e) => sendEvent(events, { event: 'state', ...e }),
      onWarning: (message) => sendEvent(events, { event: 'warning', message }),
    };
    // `nodes:` services on a multi-node Slurm allocation: agents on the other nodes (stack/multi-node/).
    const handle = plan ? runMultiNodeStack(spec, plan, { ...opts, stackFile: resolve(positionals[0]!) }) : runStack(spec, opts);

    // berth's messages: the status stream (above a live table) or stderr, and the --events-fd channel.
    const tell = (text: string, to: 'status' | 'stderr' = 'stderr') => {
      if (to === 'status') handle.say(text);
      else process.stderr.write(text + '\n');
      sendEvent(events, { event: 'message', text });
    };
    let signals = 0;
    let parentGone = false;
    const onSignal = (sig: NodeJS.Signals, cause?: 'stdin-eof') => {
      signals++;
      if (signals === 1) {
        parentGone = cause === 'stdin-eof';
        const why = parentGone ? 'stdin reached EOF: the parent that started berth went away' : sig;
        tell(`berth: ${why}: stopping the stack (dependents first); ${sig === 'SIGINT' ? 'Ctrl-C' : 'signal'} again to kill everything now`, 'status');
        void handle.stop({ signal: sig, ...(parentGone ? { cause: 'the parent went away (stdin EOF)' } : {}) });
      } else {
        tell(`berth: ${cause === 'stdin-eof' ? 'stdin EOF' : sig} again: killing every service now`, 'status');
        void handle.stop({ force: true });
      }
    };
    const result = await withSignals(onSignal, () => handle.done, { stdinEof: values['stop-on-stdin-eof'] === true });
    const where = shownPath(result.runDir);
    switch (result.reason) {
      case 'failed':
        throw new BerthError(result.exitCode, formatFailure(result), { runDir: result.runDir, ...(result.failure ? { failure: result.failure } : {}) });
      case 'job': {
        const j = result.job!;
        const how = j.signal ? `was killed by ${j.signal}` : `exited with status ${j.status}`;
        tell(`berth: job ${j.service} ${how}; stack stopped (run directory: ${where})`);
        // A failed rank: which one, its stderr's last lines, its diagnostics.
        if (j.status !== 0 && result.failure) tell(`berth: ${formatFailure(result)}`);
        break;
      }
      case 'signal': {
        // The exit status stays 128+15: --stop-on-stdin-eof stops as SIGTERM does.
        const why = parentGone && result.signal === 'SIGTERM' ? 'because the parent went away (stdin EOF)' : `by ${result.signal}`;
        tell(`berth: stopped ${why}; stack torn down, exit ${result.exitCode} (run directory: ${where})`);
        break;
      }
      default:
        tell(`berth: every service has exited; stack stopped (run directory: ${where})`);
    }
    const lost = result.writeFailures?.length ?? 0;
    if (lost > 0 && result.exitCode === EXIT.IOERR) {
      tell(`berth: exit 74: ${lost} file${lost === 1 ? '' : 's'} of the run could not be written (said above; endpoints.json lists them under writeFailures)`);
    }
    return result.exitCode;
  },
};
