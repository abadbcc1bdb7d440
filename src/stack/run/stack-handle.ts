import type { Topology } from '../file/ranks.js';
import type { GraphNode, ReplicaStatus } from '../file/graph.js';
import type { EndpointsDocument, ReplicaUpdate, StackEvent } from '../record/endpoints.js';
import type { Endpoint } from '../file/endpoint.js';
import type { StackSpec } from '../file/spec.js';
import type { StatusMode } from '../record/stack-console.js';
import type { SharedPorts, StackResult } from '../record/result.js';

/* The public face of `berth up` as a library: options and handle (the result is record/result.ts). */

export type { SharedPorts, StackFailure, StackResult } from '../record/result.js';

export interface RunStackOptions {
  /** --run-dir; default ./berth-runs/<UTC timestamp> under `cwd`. */
  runDir?: string;
  /**
   * This stack is one generation of a job restarted as a group across nodes (an agent's): its
   * ranks never restart on their own. Above 0 the run directory is the earlier generations', continued.
   */
  generation?: number;
  /**
   * With `generation`: the ranks here restart as a group on the first node's word. Called once
   * this node's old generation is gone, with the next one's shared ports if leased here; resolves
   * when the next may start (with shared ports leased elsewhere), or undefined when it never will.
   */
  generationGate?: (service: string, ended: number, leased: SharedPorts | undefined) => Promise<{ shared?: SharedPorts } | undefined>;
  /** Base of the default run directory (default process.cwd()). */
  cwd?: string;
  /** Stream every service's output, prefixed "service/replica | ", on stderr (`--follow`). */
  follow?: boolean;
  /** A job's stdout goes here (default process.stdout; null: logs only). */
  stdout?: NodeJS.WritableStream | null;
  /** A job's stderr, followed output, the status view and messages (default process.stderr). */
  stderr?: NodeJS.WritableStream | null;
  /** Status display on `stderr`: auto (table on a terminal, lines otherwise), live, plain, off (default). */
  status?: StatusMode;
  /** Base environment of the services (default process.env). */
  env?: NodeJS.ProcessEnv;
  procRoot?: string;
  /** Base of each replica's private run folder (launch()'s stateDir); it never moves leases (docs/leases.md). */
  stateDir?: string;
  /** One probe attempt may take this long (default 5s). */
  probeTimeoutMs?: number;
  /** Every state change, as written to events.jsonl. */
  onEvent?: (e: StackEvent) => void;
  /** Every non-job service is ready (or has completed); called before the services waiting for that start. */
  onReady?: (doc: EndpointsDocument) => void;
  /** berth's own warnings (launch warnings, listeners outside a replica's ports). */
  onWarning?: (message: string) => void;
  /** Services running elsewhere (other nodes): not in the spec, always ready, with these endpoints. */
  external?: ReadonlyMap<string, readonly Endpoint[]>;
  /**
   * Services running elsewhere whose endpoints come later (StackHandle.setExternal): 'pending'
   * to their dependents until then; stopExternal stops them in their turn of the stop order.
   */
  externalServices?: readonly GraphNode[];
  /** Stops an external service (its turn in the stop order: after its dependents, before its dependencies). */
  stopExternal?: (service: string) => Promise<void>;
  /** This host's node in the allocation (a berth agent's), for ranks; default one host. */
  topology?: Topology;
  /** Shared ports (`NAME: shared`) of services whose replica 0 runs on another node, which leased them. */
  shared?: ReadonlyMap<string, SharedPorts>;
  /** Every port of the stack is leased (nothing started yet): the document has `shared`. */
  onReserved?: (doc: EndpointsDocument) => void;
  /**
   * Services whose own replicas run on other nodes too (an etcd member's --initial-cluster):
   * each starts once StackHandle.setPeers gave every node's, which its own placeholders then list.
   */
  peerServices?: readonly string[];
}

export interface StackHandle {
  readonly spec: StackSpec;
  /** Absolute path of the run directory. */
  readonly runDir: string;
  /** Resolves with the endpoints once every non-job service is ready; rejects if the stack ends first. */
  readonly ready: Promise<EndpointsDocument>;
  /** Resolves (never rejects) once every service has stopped and the run directory is final. */
  readonly done: Promise<StackResult>;
  /** The current endpoints.json document. */
  endpoints(): EndpointsDocument;
  /**
   * Orderly teardown. `signal`: what berth received (the result is 128+N); `force`: SIGKILL
   * everything still running now (a second Ctrl-C); `cause`: why, for the replicas' stopping
   * lines when it is not the signal (default "berth got SIGNAL"; a parent gone: stdin EOF).
   */
  stop(opts?: { signal?: NodeJS.Signals; force?: boolean; cause?: string }): Promise<StackResult>;
  /** A message on the status stream, above a live table (nothing when the status display is off). */
  say(text: string): void;
  /** An external service is there: its endpoints, and its replicas' states (default: each endpoint ready). */
  setExternal(service: string, endpoints: readonly Endpoint[], statuses?: readonly ReplicaStatus[]): void;
  /** A replica running elsewhere (another node's), into events.jsonl, endpoints.json and the status view. */
  recordExternal(u: ReplicaUpdate): void;
  /** Every node's replicas of a peerServices service, in node order: it may start now. */
  setPeers(service: string, endpoints: readonly Endpoint[]): void;
  /** Shared ports of a service whose rank 0 runs elsewhere, into endpoints.json's `shared`. */
  recordShared(service: string, shared: SharedPorts): void;
  /** With generationGate: ends `generation` of the job `service` here for a failure elsewhere (nothing if already ending). */
  endGeneration(service: string, generation: number, why: string): void;
}
