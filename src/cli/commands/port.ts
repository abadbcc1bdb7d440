import { writeSync } from 'node:fs';
import { constants } from 'node:os';
import { reserve } from '../../allocate/reserve.js';
import { BerthError } from '../../errors.js';
import type { ReserveOptions, Strategy } from '../../allocate/types.js';
import { readSysctls } from '../../host/sysctl.js';
import type { HostSysctls } from '../../host/types.js';
import { parseCommandArgs, printJson, usage, type Command } from '../command.js';
import { procRoot } from '../env.js';
import { withSignals } from '../signals.js';
import { resolveSource, SOURCE_HELP, sourceOptions } from '../source.js';
import { parseCount, parseDurationArg } from '../values.js';

const help = `Usage: berth port [SOURCE] [--count N] [--owner PID] [--ttl DUR] [--name NAME]
                  [--format plain|env|json] [--strategy lowest|random] [--allow-ephemeral]

Lease N distinct ports that nothing else on this host (network namespace) can take:
outside the unreserved ephemeral range, with no socket in any state, not leased to anyone
else, and bindable right now. All or none.

${SOURCE_HELP}

Options:
  --count N          how many distinct ports (default 1)
  --owner PID        the lease lives while process PID lives (e.g. --owner $$ in a job script)
  --ttl DUR          the lease expires after DUR (500ms, 10s, 5m, 2h). Default without
                     --owner: 10m. With --owner, an optional extra limit.
  --name NAME        a label stored in the lease (shown by 'berth leases')
  --format F         plain: one port per line (default); env: BERTH_PORT=… lines
                     (BERTH_PORT_0…); json: the leases as JSON (same as --json)
  --strategy S       lowest (default: predictable ports) or random
  --allow-ephemeral  allow ports inside the unreserved ephemeral range (risky: any
                     outgoing connection may take them before your service binds)
  --json             JSON output

Examples:
  PORT=$(berth port --owner $$)                      # one port while this shell lives
  read A B < <(berth port --count 2 --owner $$ | xargs)
  berth port --layout layout.yaml --band engines --instance $SLURM_LOCALID --ttl 1h
  berth port --range 20000-20999 --count 4 --format env --name proxy

Leases are shared by every user of this host (network namespace): see 'berth leases'.
When the ports are taken by competitors that are about to let go (another allocator still
building its set, a hold being closed), berth retries for up to 2.5 s before giving up.

Exit codes: 0 leased; 64 usage; 65 bad layout; 69 no usable port (the message says why:
in the ephemeral range, in use and by whom, or leased); 74 cannot write leases; 128+N
interrupted by signal N before the ports were printed (nothing stays leased).`;

/**
 * A few bytes to stdout with write(2). process.stdout is a stream object (a net.Socket for
 * a pipe, as in PORT=$(berth port)), and making one costs `berth port` about 1 ms of its
 * startup. Anything unusual (non-blocking pipe full, closed reader) goes through
 * process.stdout as before, from the first byte not yet written.
 */
function writeStdout(text: string): void {
  const bytes = Buffer.from(text);
  let done = 0;
  try {
    while (done < bytes.length) done += writeSync(1, bytes, done);
  } catch {
    process.stdout.write(bytes.subarray(done));
  }
}

/**
 * The sysctls, read on first use: only the default band needs them to resolve SOURCE, and
 * reserve() reads them again with the socket table anyway. Saves `berth port --range`
 * three /proc reads at startup.
 */
function lazySysctls(root: string): HostSysctls {
  let read: HostSysctls | undefined;
  const get = () => (read ??= readSysctls(root));
  return {
    get ephemeral() {
      return get().ephemeral;
    },
    get reserved() {
      return get().reserved;
    },
    get unprivilegedStart() {
      return get().unprivilegedStart;
    },
  };
}

export const portCommand: Command = {
  name: 'port',
  summary: 'lease free ports (race-free across processes)',
  help,
  async run(argv) {
    const { values } = parseCommandArgs('port', argv, {
      ...sourceOptions,
      count: { type: 'string' },
      owner: { type: 'string' },
      ttl: { type: 'string' },
      name: { type: 'string' },
      format: { type: 'string' },
      strategy: { type: 'string' },
      json: { type: 'boolean' },
    });
    const format = values.json ? 'json' : (values.format ?? 'plain');
    if (!['plain', 'env', 'json'].includes(format)) throw usage('port', `--format ${format}: expected plain, env or json`);
    const strategy = values.strategy ?? 'lowest';
    if (strategy !== 'lowest' && strategy !== 'random') throw usage('port', `--strategy ${strategy}: expected lowest or random`);
    const root = procRoot();
    const source = await resolveSource('port', values, lazySysctls(root));
    const opts: ReserveOptions = {
      source,
      count: values.count === undefined ? 1 : parseCount('port', '--count', values.count),
      strategy: strategy as Strategy,
      hold: false,
      procRoot: root,
    };
    if (values.owner !== undefined) opts.ownerPid = parseCount('port', '--owner', values.owner);
    if (values.ttl !== undefined) opts.ttlMs = parseDurationArg('port', '--ttl', values.ttl);
    if (values.name !== undefined) opts.name = values.name;
    if (values['allow-ephemeral']) opts.allowEphemeral = true;
    // A signal before the ports are printed rolls back: the caller never learns of them.
    const stop = new AbortController();
    opts.signal = stop.signal;
    const onSignal = (sig: NodeJS.Signals) => stop.abort(new BerthError(128 + constants.signals[sig], `interrupted by ${sig}; nothing was leased`));
    // Handlers stay until the ports are printed: a signal after that changes nothing.
    await withSignals(onSignal, async () => {
      const r = await reserve(opts);
      if (stop.signal.aborted) {
        await r.release();
        throw stop.signal.reason;
      }
      if (format === 'json') printJson({ ports: r.ports, leases: r.leases, source });
      else if (format === 'env') {
        const lines = r.ports.length === 1 ? [`BERTH_PORT=${r.ports[0]}`] : [`BERTH_PORTS=${r.ports.join(',')}`, ...r.ports.map((p, i) => `BERTH_PORT_${i}=${p}`)];
        writeStdout(lines.join('\n') + '\n');
      } else writeStdout(r.ports.join('\n') + '\n');
      // Printed means leased: a signal from here to exit must not turn that into 143 (Node's
      // default action once withSignals lets go), so it is taken and ignored.
      for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(s, () => {});
    });
    return 0;
  },
};
