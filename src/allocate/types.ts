import type { PortRange } from '../host/types.js';
import type { Duration } from '../util/option-names.js';
import type { SourceOptions } from './source-options.js';

/** Where ports come from (design.md §4 SOURCE). */
export type PortSource =
  | { kind: 'port'; port: number }
  | { kind: 'range'; range: PortRange }
  | { kind: 'band'; layoutFile?: string; band: string; instance?: number; range: PortRange };

/** The JSON stored in a lease file, one per port. */
export interface LeaseRecord {
  port: number;
  /** Owner pid; absent for a lease that lives only until its expiry. */
  pid?: number;
  /** Field 22 of /proc/<pid>/stat (clock ticks since boot) so a reused pid is not the owner. */
  pidStart?: number;
  /** ms since epoch */
  expiresAt?: number;
  name?: string;
  createdAt: number;
  /** Creator's pid (for humans; ownership is pid/pidStart). */
  createdBy: number;
  netns: string;
  slurmJobId?: string;
  slurmStepId?: string;
}

export interface Lease extends LeaseRecord {
  /** Absolute path of the lease file. */
  path: string;
}

export type Strategy = 'lowest' | 'random';

/**
 * Options of reserve(): `berth port`'s flags under their own names (source options, count,
 * owner, ttl, name, strategy, allowEphemeral). Without a source, the default band.
 */
export interface ReserveOptions extends SourceOptions {
  /** `--owner PID` (same as ownerPid). */
  owner?: number;
  /** `--ttl DUR`: '10s', '5m' or ms (same as ttlMs). */
  ttl?: Duration;
  /** Distinct ports wanted (default 1). All or none. */
  count?: number;
  /** The lease lives while this pid lives (default: none; then ttlMs applies). */
  ownerPid?: number;
  /** Lease expiry from now, in ms. Default 10 minutes when there is no owner. */
  ttlMs?: number;
  name?: string;
  /** Hand out ports inside the unreserved ephemeral range (held only until the service owns them). */
  allowEphemeral?: boolean;
  /** Allow ports below ip_unprivileged_port_start (only effective for root). */
  allowPrivileged?: boolean;
  strategy?: Strategy;
  /** Keep the listening hold sockets open (default true). `berth port` passes false. */
  hold?: boolean;
  /** /proc root for the host map (tests point it at fixtures); default "/proc". */
  procRoot?: string;
  /** Lease directory override (else $BERTH_STATE_DIR, $XDG_RUNTIME_DIR/berth, /tmp/berth-<uid>). */
  stateDir?: string;
}

/** Why a port was chosen or passed over; goes into diagnostics and exit-69 messages. */
export interface AllocationReport {
  source: PortSource;
  considered: number;
  excluded: {
    ephemeral: number;
    privileged: number;
    /** Ports with a socket in any state, with the first few rows' owners. */
    inUse: { port: number; state: string; pid?: number; command?: string; uid?: number }[];
    leased: { port: number; pid?: number; name?: string }[];
    /** Ports whose bind failed although the table showed them free (a race lost). */
    bindFailed: { port: number; code: string }[];
    /**
     * Ports lost to a concurrent allocator: leased by someone else between our look at
     * the directory and our create, or our lease replaced before the hold was confirmed.
     */
    raced: { port: number; reason: string }[];
  };
}

/**
 * Ports leased and held by this process. The allocator never returns a port it does not
 * hold: while `held` is true every port has a listening socket on the wildcard address.
 */
export interface Reservation {
  readonly ports: number[];
  readonly leases: Lease[];
  readonly report: AllocationReport;
  /** Listening hold of a port (dual-stack [::] where IPv6 is on, else 0.0.0.0), for fd handoff. */
  holdFd(port: number): number | undefined;
  /** Close the hold sockets, keep the leases (the service is about to bind). */
  unhold(port?: number): Promise<void>;
  /** Close holds and remove the leases. Idempotent. */
  release(): Promise<void>;
}
