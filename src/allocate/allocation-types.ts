/* The allocator's public words: where ports come from, what a lease says, the options of an allocation and the Reservation it returns. */

import type { PortRange } from '../host/host-map.js';
import type { Duration } from '../util/option-names.js';

/** Where ports come from (SOURCE in the README's Commands). */
export type PortSource =
  | { kind: 'port'; port: number }
  | { kind: 'range'; range: PortRange }
  | { kind: 'band'; layoutFile?: string; band: string; instance?: number; range: PortRange };

/** What a lease says (docs/leases.md), read back from its record's abstract socket names: all but `port` is the binder's claim. */
export interface LeaseRecord {
  port: number;
  /** The lease lives while this pid lives (`--owner`; berth run/up: berth itself). */
  pid?: number;
  /** ms since epoch: the lease ends then (`--ttl`). */
  expiresAt?: number;
  name?: string;
  /** ms since epoch: when the lease was made. Absent when nothing says (a set still being allocated, a record without `at=`). */
  createdAt?: number;
  /** The allocator's pid (in its own pid namespace). */
  createdBy: number;
  netns: string;
  slurmJobId?: string;
  slurmStepId?: string;
}

export interface Lease extends LeaseRecord {
  /** A block's port (leased, never held) or a single port. */
  kind: 'single' | 'block';
}

export type Strategy = 'lowest' | 'random';

/** Options of the allocator: a resolved source and `berth port`'s flags. reserve() takes SOURCE options instead of `source`. */
export interface AllocateOptions {
  source: PortSource;
  /** `--owner PID` (same as ownerPid). */
  owner?: number;
  /** `--ttl DUR`: '10s', '5m' or ms (same as ttlMs). */
  ttl?: Duration;
  /** Distinct ports wanted (default 1). All or none. */
  count?: number;
  /** The lease lives while this pid lives (another process than the caller, or a ttl, hands it to a holder process). */
  ownerPid?: number;
  /** Lease expiry from now, in ms (held by a holder process). Without an owner or a ttl the lease lives while the caller holds the Reservation. */
  ttlMs?: number;
  name?: string;
  /** Hand out ports inside the unreserved ephemeral range (held only until the service owns them). */
  allowEphemeral?: boolean;
  /** Allow ports below ip_unprivileged_port_start (only effective for root). */
  allowPrivileged?: boolean;
  strategy?: Strategy;
  /** `--block N`: N contiguous ports inside the source, leased as one set and not held once leased. Excludes count > 1. */
  block?: number;
  /** Keep the listening hold sockets open (default true). `berth port` passes false. */
  hold?: boolean;
  /** fd handoff: hold each port on this address (the service's `--bind`; "::" dual-stack, "0.0.0.0" IPv4 only) with the full backlog. */
  holdAddress?: string;
  /** `--udp`: hold the port's UDP side too until the handoff (a named set: its entries say). A port with a UDP socket is never handed out. */
  udp?: boolean;
  /** /proc root for the host map (tests point it at fixtures); default "/proc". */
  procRoot?: string;
  /** ms to keep retrying while transient competitors (another allocator, a lease being given back) have the ports. Default 2500. */
  contentionMs?: number;
  /** Abort the allocation (e.g. on SIGTERM): what was taken is given back, then reserve() rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** Why a port was chosen or passed over; goes into diagnostics and exit-69 messages. */
export interface AllocationReport {
  source: PortSource;
  considered: number;
  excluded: {
    ephemeral: number;
    privileged: number;
    /** Ports with a socket in any state, with the first few rows' owners. */
    inUse: {
      port: number;
      state: string;
      /** A UDP socket (any state holds the port against a UDP bind); absent for TCP. */
      protocol?: 'udp';
      pid?: number;
      command?: string;
      uid?: number;
      /** The port is also leased under this name (a port its service chose, learned and leased by berth). */
      leasedAs?: string;
      /** The socket is the hold of a berth allocator (its owner is the port's lease holder). */
      heldByBerth?: boolean;
      /** The socket was gone when its owner was looked up (closed since the table was read). */
      closedSince?: boolean;
      /** The port's lease is a set still being allocated: the hold of that allocator (pid, when its name says). */
      inProgress?: boolean;
    }[];
    leased: {
      port: number;
      pid?: number;
      name?: string;
      /** The owner's command line, when visible. */
      command?: string;
      /** Uid the lease record names, and its login name (set only for other users). */
      uid?: number;
      user?: string;
      /** 'pending': an allocator (pid, when its name says) is still building its set. */
      kind?: 'pending';
      /** The record's owner no longer exists: its holder ends the lease within 0.2 s, so the port is contended, not taken. */
      ownerGone?: boolean;
    }[];
    /** Ports whose bind failed although the table showed them free (a race lost). */
    bindFailed: { port: number; code: string; protocol?: 'udp' }[];
    /** Ports lost to a concurrent allocator: leased by someone else between our look at the lease table and our bind. */
    raced: { port: number; reason: string }[];
  };
}

/** Ports leased and held by this process: until unhold() each has a listening socket (on holdAddress when given, else the wildcard). */
export interface Reservation {
  readonly ports: number[];
  readonly leases: Lease[];
  readonly report: AllocationReport;
  /** Listening hold of a port (on holdAddress when given, else dual-stack [::] where IPv6 is on, else 0.0.0.0), for fd handoff. */
  holdFd(port: number): number | undefined;
  /** Close the hold sockets, keep the leases (the service is about to bind). */
  unhold(port?: number): Promise<void>;
  /** Close only the UDP holds: fd handoff passes the TCP socket and the service binds UDP itself. Absent when no UDP is held. */
  unholdUdp?(): Promise<void>;
  /** Close holds and end the leases (closing their names; ending their holder process, if any). Idempotent. */
  release(): Promise<void>;
  /** A block of a port set: contiguous ports, leased but never held once allocated. */
  readonly block: boolean;
  /** Hold again every port not held now, e.g. between restarts (not a block). Throws BerthError 69 naming who has a port; the leases stay. */
  rehold(): Promise<void>;
}
