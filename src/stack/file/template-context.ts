import { portValue, type AssignedPorts } from '../../allocate/port-set.js';
import { endpointHostPort, reachableHost, type Endpoint } from './endpoint.js';
import type { Rank } from './ranks.js';
import { schemeUrl } from './server-keys.js';

/*
 * What a config-file template sees (mustache, logic-less): plain data built from what the
 * stack knows before a replica starts. Every port is leased up front, so the dependencies'
 * replicas and ports are known when the file is rendered.
 *
 *   name, replica (= index), replicas, host, port, hostport, url      this replica
 *   ports.NAME.{port,first,last,count,range,host,hostport}             its named ports (shared
 *                                                                      ones: host of replica 0)
 *   rank, world_size, local_rank, node_rank, node_count, node          its rank (ranks.ts)
 *   gpu                                                                with replicas: gpus
 *   dir                                                                the replica's own directory,
 *                                                                      {dir} of its command (data,
 *                                                                      pid files, sockets)
 *   SVC.{name,port,host,hostport,url,ports,count,urls,hostports}       a dependency (replica 0's
 *                                                                      values, and joined lists)
 *   SVC.replicas[] {name,index,host,port,hostport,url,ports,first,last,self,   each of its replicas
 *                   rank,node,node_rank}                               (self: this replica's own entry)
 *   services[] {name, replicas[], …}                                   every dependency, in order, then the service itself (its peers)
 *
 * A url is SCHEME://HOST:PORT of the service's `scheme:`; a service with `scheme: none` has none.
 * A dependency whose name is one of this replica's own fields (a service called "host") is
 * only in `services`. Hosts of dependencies are where they are reached: a wildcard bind
 * (0.0.0.0, ::) is reached on loopback. `first`/`last` on a replica let a loop write
 * separators: {{#etcd.replicas}}{{name}}{{index}}={{url}}{{^last}},{{/last}}{{/etcd.replicas}}.
 */

/** One named port: a single has first = last = port and count 1; a block its whole span. */
export interface TemplatePort {
  port: number;
  first: number;
  last: number;
  count: number;
  /** "FIRST-LAST" */
  range: string;
  /** Where it is reached, and "HOST:PORT" of its first port. */
  host: string;
  hostport: string;
}

export interface TemplateReplica {
  /** The service's name (inside a loop, {{name}} would otherwise be the outer context's). */
  name: string;
  index: number;
  host: string;
  port: number;
  /** "HOST:PORT", IPv6 hosts bracketed. */
  hostport: string;
  /** "SCHEME://HOST:PORT"; absent with `scheme: none`. */
  url?: string;
  ports: Record<string, TemplatePort>;
  first: boolean;
  last: boolean;
  /** The entry that is this replica itself (in its own service's list: an etcd member's advertise URL). */
  self: boolean;
  /** Its rank (its place in the list: node order, then replica order), its node's name and index. */
  rank: number;
  node: string;
  node_rank: number;
}

export interface TemplateService {
  name: string;
  /** Replica 0's values (the single-replica shorthands, as {svc.port} and {svc.url}). */
  host: string;
  port: number;
  hostport: string;
  url?: string;
  ports: Record<string, TemplatePort>;
  count: number;
  /** Every replica's, joined with "," (absent with `scheme: none`). */
  urls?: string;
  hostports: string;
  replicas: TemplateReplica[];
}

export interface TemplateContext {
  name: string;
  replica: number;
  replicas: number;
  host: string;
  port?: number;
  hostport?: string;
  url?: string;
  gpu?: number;
  dir?: string;
  ports: Record<string, TemplatePort>;
  rank?: number;
  world_size?: number;
  local_rank?: number;
  node_rank?: number;
  node_count?: number;
  node?: string;
  generation?: number;
  services: TemplateService[];
  [dependency: string]: unknown;
}

/** A started replica of a dependency, as the stack knows it. */
export type TemplateEndpoint = Endpoint;

export interface TemplateInput {
  /** This service's name, replica index and replica count. */
  name: string;
  replica: number;
  replicas: number;
  /** The address this replica listens on. */
  host: string;
  /** Its primary port (absent with `port: none`). */
  port?: number;
  gpu?: number;
  /** Its own directory ({dir}). */
  dir?: string;
  /** Its service's `scheme:` (default http; null: no URL). */
  scheme?: string | null;
  /** Its named ports, in `ports:` order (its service's shared ports after them). */
  ports?: readonly AssignedPorts[];
  /** Where its shared ports are reached (replica 0's host), by name. */
  sharedHosts?: ReadonlyMap<string, string>;
  rank?: Rank;
  /** The dependencies' replicas, in replica order; map order is the order of `services`. */
  dependencies: ReadonlyMap<string, readonly TemplateEndpoint[]>;
}

/** The fields of the context itself; a dependency with one of these names is only in `services`. */
export const OWN_FIELDS: readonly string[] = [
  'name',
  'replica',
  'replicas',
  'host',
  'port',
  'hostport',
  'url',
  'gpu',
  'dir',
  'ports',
  'services',
  'rank',
  'world_size',
  'local_rank',
  'node_rank',
  'node_count',
  'node',
  'generation',
];

/** The dependencies a template names by path ({{etcd.port}}): a tag inside a list section may reach them. */
export function serviceNames(ctx: TemplateContext): string[] {
  return Object.keys(ctx).filter((k) => !OWN_FIELDS.includes(k));
}

function templatePorts(set: readonly AssignedPorts[] | undefined, host: string, sharedHosts?: ReadonlyMap<string, string>): Record<string, TemplatePort> {
  const out: Record<string, TemplatePort> = {};
  for (const a of set ?? []) {
    const at = sharedHosts?.get(a.name) ?? reachableHost(host);
    out[a.name] = {
      port: a.ports[0]!,
      first: a.ports[0]!,
      last: a.ports[a.ports.length - 1]!,
      count: a.ports.length,
      range: portValue(a, 'range'),
      host: at,
      hostport: endpointHostPort({ host: at, port: a.ports[0]! }),
    };
  }
  return out;
}

function service(name: string, eps: readonly TemplateEndpoint[], self: number | undefined, here: string): TemplateService {
  const replicas = eps.map((e, index): TemplateReplica => {
    const host = reachableHost(e.host);
    const hp = endpointHostPort(e);
    const url = schemeUrl(e.scheme, hp);
    // An endpoint without a node is one of this host's (a stack on one host).
    const at = { rank: index, node: e.node ?? here, node_rank: e.nodeRank ?? 0 };
    return {
      name,
      index,
      host,
      port: e.port,
      hostport: hp,
      ...(url !== null ? { url } : {}),
      ports: templatePorts(e.ports, e.host),
      first: index === 0,
      last: index === eps.length - 1,
      self: index === self,
      ...at,
    };
  });
  const r0 = replicas[0];
  const urls = eps[0]?.scheme === null ? {} : { url: r0?.url ?? '', urls: replicas.map((r) => r.url).join(',') };
  return {
    name,
    host: r0?.host ?? '',
    port: r0?.port ?? 0,
    hostport: r0?.hostport ?? '',
    ...urls,
    ports: r0?.ports ?? {},
    count: replicas.length,
    hostports: replicas.map((r) => r.hostport).join(','),
    replicas,
  };
}

/** The context one replica's templates are rendered with. Pure. */
export function templateContext(input: TemplateInput): TemplateContext {
  // Its own entry among its peers: its rank (= its replica on one host; node order across nodes).
  const services = [...input.dependencies].map(([name, eps]) =>
    service(name, eps, name === input.name ? (input.rank?.rank ?? input.replica) : undefined, input.rank?.node ?? ''),
  );
  const ctx: TemplateContext = {
    name: input.name,
    replica: input.replica,
    replicas: input.replicas,
    host: input.host,
    ports: templatePorts(input.ports, input.host, input.sharedHosts),
    services,
  };
  const r = input.rank;
  if (r)
    Object.assign(ctx, {
      rank: r.rank,
      world_size: r.worldSize,
      local_rank: r.localRank,
      node_rank: r.nodeRank,
      node_count: r.nodeCount,
      node: r.node,
      generation: r.generation,
    });
  if (input.port !== undefined) {
    ctx.port = input.port;
    ctx.hostport = endpointHostPort({ host: input.host, port: input.port });
    const url = schemeUrl(input.scheme, ctx.hostport);
    if (url !== null) ctx.url = url;
  }
  if (input.gpu !== undefined) ctx.gpu = input.gpu;
  if (input.dir !== undefined) ctx.dir = input.dir;
  for (const s of services) if (!OWN_FIELDS.includes(s.name)) ctx[s.name] = s;
  return ctx;
}
