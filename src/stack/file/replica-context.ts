import type { AssignedPorts } from '../../allocate/port-set.js';
import type { Endpoint } from './endpoint.js';
import type { Rank } from './ranks.js';

/*
 * What one replica knows before a start. Its placeholders (fill-placeholders.ts) and its config
 * templates (template-context.ts) both render from this one value, built once per start
 * (stack/run/start-attempt.ts); the load-time template check renders a stand-in of its shape.
 */
export interface ReplicaContext {
  /** This service's name, replica index and replica count. */
  name: string;
  replica: number;
  replicas: number;
  host: string;
  /** This replica's port; when undefined, `{port}` is left in place for the launcher to fill. */
  port?: number;
  /** Its service's `scheme:` (default http; null: none, no URL). */
  scheme?: string | null;
  /** Names of its own learned ports: `{ports.NAME…}` of them is left in place for the launcher (its ready probe). */
  learned?: ReadonlySet<string>;
  /** The replica's GPU (node-wide index) under `replicas: gpus`. */
  gpu?: number;
  /** Its own directory ({dir}, {{dir}}), made before its first start. */
  dir?: string;
  /** Every replica directory of the services on this host ({svc.dir}, {svc.dirs}), by service. */
  dirs?: ReadonlyMap<string, readonly string[]>;
  /** This replica's named ports ({ports.NAME}), its service's shared ports included (after its own). */
  ports?: readonly AssignedPorts[];
  /** Where each shared port is reached (replica 0's host), by name. */
  sharedHosts?: ReadonlyMap<string, string>;
  /** Shared ports of the services it depends on, by service ({svc.port.NAME} of a shared NAME). */
  sharedOf?: ReadonlyMap<string, SharedPorts>;
  /** Its rank (ranks.ts); {rank} and the others need it. */
  rank?: Rank;
  /** The replicas of the services it depends on (and its own, its peers), in replica order; map order is `services` order. */
  endpoints: ReadonlyMap<string, readonly Endpoint[]>;
  /** This replica's rendered config files, name → absolute path ({templates.NAME}). */
  templates?: ReadonlyMap<string, string>;
}

/** A service's shared ports (one lease for all its replicas) and where they are reached (replica 0's host); the run records them too. */
export interface SharedPorts {
  host: string;
  ports: AssignedPorts[];
}
