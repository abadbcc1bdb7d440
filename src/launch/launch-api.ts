/* launch() as the library offers it: its options, handle, events and results, and the words they use (handoff, ready spec, phase). */

import type { AssignedPorts, PortEntry } from '../allocate/port-set.js';
import type { NamedReservation } from '../allocate/reserve-named.js';
import type { SourceOptions } from '../source/options.js';
import type { PortSource, Reservation } from '../allocate/allocation-types.js';
import type { Duration } from '../util/option-names.js';
import type { LearnEntry } from './learn.js';

/** How the held port passes to the service (docs/run.md). */
export type Handoff = 'release' | 'fd';

/** A parsed `--ready` value. */
export type ReadySpec =
  /** GET this URL (after `{port}` substitution); any 2xx is ready. */
  | { kind: 'http'; url: string }
  /** A TCP connect to the service's port succeeds (refused with fd handoff: proves nothing). */
  | { kind: 'tcp' }
  /** `sh -c COMMAND` exits 0 (the user's own text, so a shell is what they asked for). */
  | { kind: 'cmd'; command: string };

/** Where a launch is: diagnostics name the phase a failure happened in. */
export type LaunchPhase = 'reserve' | 'spawn' | 'ownership' | 'learn' | 'probe' | 'ready' | 'stopping' | 'exited';

/**
 * Options of launch(): `berth run`'s flags under their own names (`--env NAME` is envName: env
 * is the service's environment). Without a source or reservation: the default band, like `berth run`.
 */
export interface LaunchOptions extends SourceOptions {
  /** Argv of the service, no shell. `{port}`, `{host}`, `{name}` in any element are replaced (unless `substitute: false`). */
  command: string[];
  /**
   * false: `command` and `ready` are used as given (a caller that filled in its own placeholders),
   * but for learned ports in `ready` (`{port}` of a learned primary, `{ports.NAME…}` of a learned
   * entry): only launch knows them. Default true.
   */
  substitute?: boolean;
  /** Where the port comes from (also port, range, layout/band/instance). Ignored when `reservation` is given. Default: the default band. */
  source?: PortSource | 'resv';
  /** A reservation made by the caller (e.g. a stack that allocates up front); its first port is used. */
  reservation?: Reservation;
  /**
   * A named port set (`berth run --ports http,dist=block:32`), leased from the source all or none.
   * The first entry must be a single port: the primary ({port}, PORT, ownership, readiness). Each
   * port reaches the service as BERTH_PORT_<NAME> (a block also _FIRST/_LAST/_COUNT) and as
   * `{ports.NAME}` / `{ports.NAME.first|last|range|count}` in command and ready; with fd handoff
   * each single port is its own fd (3, 4, … in set order; LISTEN_FDS, LISTEN_FDNAMES), blocks
   * never. Not with `reservation`, `portSet` or `portless`.
   */
  ports?: PortEntry[];
  /** A set the caller reserved (e.g. a stack replica's), used like `ports`; its first entry must be a single port. */
  portSet?: NamedReservation;
  /** The caller keeps the leases: `reservation`/`portSet` is not released when the launch ends (a stack re-holds them for a restart). */
  keepReservation?: boolean;
  /**
   * A service without a port (a client, a worker): nothing is reserved, no ownership phase; ready
   * once spawned, or once `ready` succeeds (`cmd:`, or `http` to a URL that names its own port;
   * `tcp` and `{port}` are refused with 64). Events and ReadyInfo carry port 0 (ReadyInfo host '').
   * Not with `source`, `reservation` or `handoff: 'fd'`.
   */
  portless?: boolean;
  /**
   * Ports the service chooses itself (port 0), learned from its tree's listeners (and, with a
   * pattern, its output lines), then leased until the launch ends. Without `ports`/`portSet`/
   * `reservation` the first is the primary ({port} of the ready probe, ReadyInfo.port) and nothing
   * is reserved before the spawn. The command cannot name a learned port: it is not known yet.
   */
  learn?: LearnEntry[];
  /** The primary port is learn[0] although a set is given (a stack's `ports: { api: learn, … }`). */
  learnPrimary?: boolean;
  /** Label for messages, leases, the run folder (default: basename of command[0]). */
  name?: string;
  /** The address the service is told to listen on (`{host}`, BERTH_HOST) and berth probes on. */
  bind?: string;
  /** Environment variable that carries the port (default PORT). BERTH_PORT is always set. */
  envName?: string;
  /** Base environment of the service (default process.env). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Default 'release'. */
  handoff?: Handoff;
  /** A spec (`http://127.0.0.1:{port}/health`, `tcp`, `cmd:…`) or a parsed one. No probe: ownership is readiness. */
  ready?: string | ReadySpec;
  /** Overall deadline for readiness, from launch() (default 10 minutes). */
  readyTimeoutMs?: number;
  /** `--ready-timeout DUR`: '90s', '10m' or ms (same as readyTimeoutMs). */
  readyTimeout?: Duration;
  /** How messages name options, by CLI flag: a stack says its keys (`{ '--ready-timeout': 'ready_timeout' }`). Default: the CLI's flags. */
  optionNames?: Readonly<Record<string, string>>;
  /** One probe attempt may take this long (default 5s, never past the deadline). */
  probeTimeoutMs?: number;
  /** Write {name, host, port, pid, readyAt, waitedMs} here atomically when ready. */
  readyFile?: string;
  /** The run's folder (stdout.log, stderr.log; diagnostics.json on failure). Default: a private one, removed after a clean run. */
  diagDir?: string;
  /**
   * The child's stdout/stderr are appended (created 0600) to these files instead of the run folder's logs. A bundle
   * still gets complete stdout.log/stderr.log: copies of this launch's part, taken when it is written and when the launch ends.
   */
  stdoutLog?: string;
  stderrLog?: string;
  allowEphemeral?: boolean;
  /**
   * The service uses its (primary) port's UDP side too (`berth run --udp`): held as well until the handoff (a port with a UDP
   * socket is never handed out). With fd handoff only the TCP socket is handed over; the UDP hold closes right before the start.
   */
  udp?: boolean;
  /** TERM → KILL grace for stop() and failure cleanup (default 10s). */
  stopGraceMs?: number;
  /** `--stop-grace DUR` (same as stopGraceMs). */
  stopGrace?: Duration;
  /** Where the child's output is streamed through (default process.stdout / process.stderr; null: logs only). */
  stdout?: NodeJS.WritableStream | null;
  stderr?: NodeJS.WritableStream | null;
  /** The child's stdin (default 'ignore'; the CLI passes 'inherit'). */
  stdin?: 'inherit' | 'ignore';
  /** Every state change, for callers that keep an event log. */
  onEvent?: (event: LaunchEvent) => void;
  /** Run folder base (else $BERTH_STATE_DIR, $XDG_RUNTIME_DIR/berth, /tmp/berth-<uid>); leases are never there (docs/leases.md). */
  stateDir?: string;
  /** /proc root (default '/proc'). */
  procRoot?: string;
  /** Files made for this start (a stack's rendered config templates): listed in diagnostics.json. */
  files?: { name: string; source: string; path: string }[];
  /** Ports leased outside its own set that the service may listen on (a stack's shared ports): not reported by the audit. */
  sharedPorts?: readonly AssignedPorts[];
  /** Listeners outside the set the service cannot control (a stack's `strays:`): recorded (audit event, diagnostics), not warned about. */
  strays?: readonly StrayRule[];
  /** Said instead of the 'warning' event for one audit pass's findings ('audit' still comes first); `message`: the warning's text. */
  onAuditWarning?: (found: AuditFinding[], message: string) => void;
  /**
   * A foreign listener after ready (outside the tree on one of its ports: a SO_REUSEPORT member, the other family's
   * loopback) fails the launch with 70 instead of a warning (`--strict`). Before ready it always fails it, with 69.
   */
  strict?: boolean;
  /** A one-shot step (a stack's initdb, a migration): its exit 0 is its end, even before it was ready. */
  oneShot?: boolean;
  /** Said after "exited with status 0 before it was ready": how to make it a one-shot step. */
  exitZeroHint?: string;
  /** The service's own directory (a stack's {dir}): named in diagnostics.json. */
  dir?: string;
  /** Reservations outside its own whose leases the service depends on (a stack's shared ports): held by its watchdog too if berth dies. */
  leasesHeld?: readonly Reservation[];
}

/** A kind of listener outside the set that is expected: in the ephemeral range, any, or on these ports. */
export type StrayRule = { kind: 'ephemeral' } | { kind: 'all' } | { kind: 'ports'; lo: number; hi: number };

export interface ReadyInfo {
  name: string;
  /** Address berth reached the service on: never "localhost" ('' for a portless launch). */
  host: string;
  /** 0 for a portless launch. */
  port: number;
  /** The child's pid; the listening process's pid once the child has exited (daemonized service). */
  pid: number;
  /** ISO 8601 UTC. */
  readyAt: string;
  /** From spawn to ready. */
  waitedMs: number;
  /** The named port set, when the launch has one (LaunchOptions.ports/portSet), learned ports last. */
  ports?: AssignedPorts[];
  /** The names of the ports it learned (LaunchOptions.learn). */
  learned?: string[];
}

/** A LISTEN socket of the service's process tree on a port outside its set (the listener audit). */
export interface AuditFinding {
  port: number;
  /** A UDP socket (bound, unconnected) rather than a TCP listener. */
  protocol?: 'udp';
  /** Local address it listens on ("0.0.0.0", "::", "127.0.0.1"). */
  address: string;
  /** The tree member holding it, and its command line. */
  pid?: number;
  command?: string;
  /** Inside the host's unreserved ephemeral range: any outgoing connection may take the port first. */
  ephemeral: boolean;
  /** One line saying what, where, and what to do (the `warning` event says it, several at once in one). */
  message: string;
  /** Expected by the service (LaunchOptions.strays): recorded, not warned about. */
  acknowledged?: boolean;
}

/** A LISTEN socket on one of the launch's ports held by a process outside its tree (foreign.ts). */
export interface ForeignListener {
  port: number;
  address: string;
  family: 4 | 6;
  /** The socket's uid (from the socket table: known even when its holder is not visible). */
  uid: number;
  inode: number;
  /** Its first visible holder and that one's command line (redacted). */
  pid?: number;
  command?: string;
  /** Every visible holder (a socket shared across fork() has several). */
  pids: number[];
  /** Same family, address and port as a listener of the tree: one SO_REUSEPORT group, connections split. */
  reuseport: boolean;
  /** What, who and where, in one line. */
  message: string;
}

export interface ExitInfo {
  /** What `berth run` exits with: the child's status once ready (128+N for signal N); 128+N when stop(N) came before ready; else 69/70/75/64/74. */
  exitCode: number;
  /** The child's own exit, when it ran. */
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Whether the service was ever ready. */
  ready: boolean;
  /** The launch failure, when there was one (also the rejection of `ready`). */
  error?: Error;
  /** The run folder (logs; diagnostics.json on failure), when it was kept. */
  runDir?: string;
  /** Path of diagnostics.json when a bundle was written. */
  bundle?: string;
  /** Files that could not be written while it ran (its logs on a full disk): `berth run` then exits 74 where it would exit 0. */
  writeFailed?: { path: string; error: string }[];
}

export interface LaunchHandle {
  readonly name: string;
  /** Resolves once the service is ready; rejects with a LaunchError (exitCode 69/70/75…) otherwise. */
  readonly ready: Promise<ReadyInfo>;
  /** Resolves (never rejects) when the service has ended and everything is cleaned up. */
  readonly exited: Promise<ExitInfo>;
  /** The chosen port, once reserved (never, for a portless launch). */
  readonly port: number | undefined;
  /** The named port set, once reserved (only with LaunchOptions.ports/portSet). */
  readonly ports: AssignedPorts[] | undefined;
  /** The child's pid, once spawned. */
  readonly pid: number | undefined;
  readonly phase: LaunchPhase;
  /** The run folder (logs; diagnostics.json on failure). */
  readonly runDir: string;
  /** Send a signal to the service's process group (and tree members outside it). */
  signal(sig: NodeJS.Signals): void;
  /** Send `signal` (default SIGTERM), then SIGKILL after the grace; resolves like `exited`. */
  stop(opts?: { signal?: NodeJS.Signals; graceMs?: number }): Promise<ExitInfo>;
  /** Processes of its tree still running, looked up now (after `exited`: what outlived SIGKILL). */
  survivors(): TreeSurvivor[];
}

/** A process of a launch's tree found running. */
export interface TreeSurvivor {
  pid: number;
  /** Its state letter from /proc/PID/stat (R, S, D, T …). */
  state: string;
  command: string;
}

export type LaunchEvent =
  | { type: 'reserved'; port: number; ports?: AssignedPorts[]; t: string }
  | { type: 'spawned'; pid: number; port: number; handoff: Handoff; t: string }
  | { type: 'owned'; pid: number; port: number; owners: number[]; t: string }
  /** Ports the service chose, learned (learn.ts) and leased; `ephemeral`: those inside the ephemeral range. */
  | { type: 'learned'; ports: AssignedPorts[]; ephemeral: number[]; t: string }
  | { type: 'ready'; info: ReadyInfo; t: string }
  | { type: 'stopping'; signal: NodeJS.Signals; t: string }
  | { type: 'failed'; phase: LaunchPhase; exitCode: number; message: string; bundle?: string; t: string }
  | { type: 'exited'; code: number | null; signal: NodeJS.Signals | null; exitCode: number; t: string }
  | { type: 'warning'; message: string; t: string }
  /** A file of the launch (a log) could not be written from now on (a full disk): once per file. */
  | { type: 'write-failed'; path: string; error: string; message: string; t: string }
  /** Listeners of the tree outside its set, first seen now (each port is reported once per launch). */
  | { type: 'audit'; listeners: AuditFinding[]; t: string }
  /** Listeners of other processes on the launch's ports, first seen now (each socket once); before ready a 'failed' follows. */
  | { type: 'foreign'; listeners: ForeignListener[]; t: string };
