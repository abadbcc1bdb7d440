import { constants } from 'node:os';
import { checkLeaseName } from '../../allocate/allocate-ports.js';
import { DEFAULT_TTL_MS } from '../../allocate/reserve-set.js';
import { BerthError } from '../../errors.js';
import type { Reservation, Strategy } from '../../allocate/allocation-types.js';
import type { NamedReservation } from '../../allocate/reserve-named.js';
import type { ReserveOptions } from '../../source/options.js';
import { reserve, reserveNamedSet } from '../../source/reserve.js';
import { describeAssigned, MAX_BLOCK, parsePortsFlag, portSetEnv, type AssignedPorts } from '../../allocate/port-set.js';
import { readSysctls } from '../../host/sysctl.js';
import { TTL } from '../../util/duration.js';
import type { HostSysctls } from '../../host/host-map.js';
import { jsonText, parseCommandArgs, usage, type Command } from '../command.js';
import { procRoot } from '../env.js';
import { SIGNALS } from '../early-signals.js';
import { withSignals } from '../signals.js';
import { stdoutClosed, unwritable, writeAllStdout } from '../stdout.js';
import { resolveSource, SOURCE_HELP, sourceOptions } from '../source.js';
import { MAX_PID, MAX_PORTS, parseCount, parseDurationArg } from '../values.js';

const help = `Usage: berth port [SOURCE] [--count N | --block N | --ports SPEC] [--owner PID] [--ttl DUR]
                  [--name NAME] [--format plain|env|json] [--strategy lowest|random]
                  [--allow-ephemeral]

Lease N distinct ports that nothing else on this host (network namespace) can take:
outside the unreserved ephemeral range, with no socket in any state, not leased to anyone
else, and bindable right now. All or none.

${SOURCE_HELP}

Options:
  --count N          how many distinct ports (default 1)
  --block N          N contiguous ports LO..HI, every one checked like a single port, leased
                     as one (all or none) and not held: for a program that binds inside a
                     range itself. Prints LO-HI; --format env: BERTH_PORT=LO,
                     BERTH_PORT_FIRST=LO, BERTH_PORT_LAST=HI, BERTH_PORT_COUNT=N
  --ports SPEC       a named set, all or none: NAME (one port), NAME=block:N (N contiguous
                     ports), NAME=window (the --instance window less the set's other ports),
                     comma-separated, e.g. http,dist=block:32. Prints "NAME PORT" or
                     "NAME LO-HI" lines; --format env: BERTH_PORT_<NAME>=its first port, and
                     BERTH_PORT_<NAME>_FIRST/_LAST/_COUNT for blocks. Lease names: NAME, or
                     --name's value + "/NAME"
  --owner PID        the lease lives while process PID lives (e.g. --owner $$ in a job script);
                     an exited PID its parent has not reaped yet (a zombie) still counts
  --ttl DUR          the lease expires after DUR (500ms, 10s, 5m, 2h; at most 8784h, 366
                     days). Default without --owner: 10m. With --owner, an optional extra
                     limit.
  --name NAME        a label stored in the lease (shown by 'berth leases'; at most 64
                     characters)
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

  # vLLM: the API port, and a block for the internal ports it scans upward from VLLM_PORT
  eval "$(berth port --owner $$ --ports api,internal=block:32 --format env)"
  VLLM_PORT=$BERTH_PORT_INTERNAL vllm serve MODEL --port $BERTH_PORT_API

  # SGLang: HTTP, NCCL and dist-init ports of one server
  eval "$(berth port --owner $$ --ports http,nccl,dist --format env)"
  python -m sglang.launch_server --model-path MODEL --port $BERTH_PORT_HTTP \\
    --nccl-port $BERTH_PORT_NCCL --dist-init-addr 127.0.0.1:$BERTH_PORT_DIST

  # Ray: the GCS port and the worker port range from one set
  eval "$(berth port --owner $$ --ports gcs,workers=block:1000 --format env)"
  ray start --head --port $BERTH_PORT_GCS \\
    --min-worker-port $BERTH_PORT_WORKERS_FIRST --max-worker-port $BERTH_PORT_WORKERS_LAST

  # one block per engine instance of a layout band
  berth port --layout layout.yaml --band engines --instance auto --block 100 --owner $$

Leases are shared by every user and container of this network namespace, whatever their
/tmp (docs/leases.md): see 'berth leases'. With --owner or --ttl a small holder process
(berth-lease-holder: coreutils tail/sleep/timeout, about 2 MiB) keeps the lease after berth
port exits, exactly as long as the owner lives or the ttl lasts.
When the ports are taken by competitors that are about to let go (another allocator still
building its set, a hold being closed, an --owner lease whose owner just ended), berth
retries for up to 2.5 s before giving up.

A block is leased, never held: its ports are free for your program to bind at once, and
every berth allocator on the host (stacks, other users, berth port) skips them while the
lease lasts (a program that binds without berth is not stopped). Lease it with --owner or a
--ttl long enough for the program's life.

Exit codes: 0 leased; 64 usage (e.g. --block with --count, --block 0, a bad --ports; an
--owner that is not a live process of this PID namespace: a thread, berth itself, gone);
65 bad layout; 69 no usable port (the message says why: in the ephemeral range, in use
and by whom, or leased; for a block, the longest free run); 74 cannot write leases; 128+N
interrupted by signal N before the ports were printed (nothing stays leased).
74 also when out of file descriptors (the message says which limit to raise), and when
the ports cannot be written to stdout (closed, /dev/full, a disk full): the lease is
given back, so no port stays leased that nobody was told of.`;

/** The sysctls, read on first use: only the default band needs them (reserve() reads them again anyway). */
function lazySysctls(root: string): HostSysctls {
  let read: HostSysctls | undefined;
  const lazy = {} as HostSysctls;
  for (const k of ['ephemeral', 'reserved', 'unprivilegedStart'] as const)
    Object.defineProperty(lazy, k, { enumerable: true, get: () => (read ??= readSysctls(root))[k] });
  return lazy;
}

export const portCommand: Command = {
  help,
  async run(argv) {
    const { values } = parseCommandArgs('port', argv, {
      ...sourceOptions,
      count: { type: 'string' },
      block: { type: 'string' },
      ports: { type: 'string' },
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
    // --count 1 is what --block and --ports are anyway.
    const shape = [
      values.count !== undefined && values.count !== '1' && `--count ${values.count}`,
      values.block !== undefined && '--block',
      values.ports !== undefined && '--ports',
    ].filter((f) => f !== false);
    if (shape.length > 1) throw usage('port', `${shape.join(' and ')}: give one (a count of distinct ports, one block, or a named set)`);
    const entries = values.ports === undefined ? undefined : asUsageOf(() => parsePortsFlag(values.ports!));
    const root = procRoot();
    const source = await resolveSource('port', values, lazySysctls(root));
    const opts: ReserveOptions = {
      source,
      strategy: strategy as Strategy,
      hold: false,
      procRoot: root,
    };
    if (entries === undefined && values.block === undefined)
      opts.count = values.count === undefined ? 1 : parseCount('port', '--count', values.count, 1, MAX_PORTS);
    if (values.block !== undefined) {
      opts.block = parseCount('port', '--block', values.block, 1, MAX_PORTS);
      if (opts.block > MAX_BLOCK) throw usage('port', `--block ${opts.block}: a block has at most ${MAX_BLOCK} ports`);
    }
    if (values.owner !== undefined) opts.ownerPid = parseCount('port', '--owner', values.owner, 1, MAX_PID);
    // berth port exits at once: as its own owner the lease would end with it (the library's own pid means "I hold it").
    if (opts.ownerPid === process.pid)
      throw usage('port', `--owner ${opts.ownerPid} is this berth process itself, which exits at once: give the pid of the process the lease is for (e.g. $$)`);
    if (values.ttl !== undefined) opts.ttlMs = parseDurationArg('port', '--ttl', values.ttl, TTL);
    // Without an owner the lease still must end some time: its holder process sleeps this long.
    if (opts.ownerPid === undefined && opts.ttlMs === undefined) opts.ttlMs = DEFAULT_TTL_MS;
    if (values.name !== undefined) {
      asUsageOf(() => checkLeaseName(values.name, '--name'));
      opts.name = values.name;
    }
    if (values['allow-ephemeral']) opts.allowEphemeral = true;
    // A signal before the ports are printed rolls back: the caller never learns of them.
    const stop = new AbortController();
    opts.signal = stop.signal;
    const onSignal = (sig: NodeJS.Signals) => stop.abort(new BerthError(128 + constants.signals[sig], `interrupted by ${sig}; nothing was leased`));
    // Handlers stay until the ports are printed: a signal after that changes nothing.
    // The ports printed are the caller's only record of the lease: with nowhere to print them, lease nothing.
    if (stdoutClosed()) throw unwritable('closed', 'the ports would never be seen; nothing was leased (discard them with >/dev/null)');
    await withSignals(onSignal, async () => {
      let lease: { release(): Promise<void> };
      let text: string;
      if (entries !== undefined) {
        const set = await reserveNamedSet(entries, opts).catch(asUsage);
        lease = set;
        text = setText(set, format, source);
      } else if (opts.block !== undefined) {
        const r = await reserve(opts).catch(asUsage);
        lease = r;
        text = blockText(r, format, source);
      } else {
        const r = await reserve(opts);
        lease = r;
        text = portsText(r, format, source);
      }
      if (stop.signal.aborted) {
        await lease.release();
        throw stop.signal.reason;
      }
      await writeAllStdout(text).catch(async (e: NodeJS.ErrnoException) => {
        await lease.release();
        throw unwritable(e.code ?? 'EIO', 'the ports were not printed, so their lease was given back');
      });
      // Printed means leased: a signal from here to exit must not turn that into 143 (Node's
      // default action once withSignals lets go), so it is taken and ignored.
      for (const s of SIGNALS) process.on(s, () => {});
    });
    return 0;
  },
};

/** The library's usage errors (a bad --block or --ports) with the command's help hint. */
function asUsage(e: unknown): never {
  if (e instanceof BerthError && e.exitCode === 64) throw usage('port', e.message);
  throw e;
}

function asUsageOf<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    return asUsage(e);
  }
}

/** `{ NAME: port | {first, last, count} }`, the shape endpoints.json gives a stack's named ports. */
function portsObject(set: readonly AssignedPorts[]): Record<string, number | { first: number; last: number; count: number }> {
  const o: Record<string, number | { first: number; last: number; count: number }> = {};
  for (const a of set) o[a.name] = a.kind === 'single' ? a.ports[0]! : { first: a.ports[0]!, last: a.ports[a.ports.length - 1]!, count: a.ports.length };
  return o;
}

function setText(set: NamedReservation, format: string, source: unknown): string {
  if (format === 'json') return jsonText({ ports: portsObject(set.assigned), set: set.assigned, leases: set.reservations.flatMap((r) => r.leases), source });
  if (format === 'env') return Object.entries(portSetEnv(set.assigned)).map(([k, v]) => `${k}=${v}\n`).join('');
  return set.assigned.map((a) => `${a.name} ${describeAssigned(a)}\n`).join('');
}

function blockText(r: Reservation, format: string, source: unknown): string {
  const first = r.ports[0]!;
  const last = r.ports[r.ports.length - 1]!;
  if (format === 'json') return jsonText({ ports: r.ports, first, last, count: r.ports.length, leases: r.leases, source });
  if (format === 'env') return `BERTH_PORT=${first}\nBERTH_PORT_FIRST=${first}\nBERTH_PORT_LAST=${last}\nBERTH_PORT_COUNT=${r.ports.length}\n`;
  return `${first}-${last}\n`;
}

function portsText(r: Reservation, format: string, source: unknown): string {
  if (format === 'json') return jsonText({ ports: r.ports, leases: r.leases, source });
  if (format === 'env') {
    const lines = r.ports.length === 1 ? [`BERTH_PORT=${r.ports[0]}`] : [`BERTH_PORTS=${r.ports.join(',')}`, ...r.ports.map((p, i) => `BERTH_PORT_${i}=${p}`)];
    return lines.join('\n') + '\n';
  }
  return r.ports.join('\n') + '\n';
}
