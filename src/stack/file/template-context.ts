import { portValue, type AssignedPorts } from '../../allocate/port-set.js';
import { endpointHostPort, reachableHost, type Endpoint } from './endpoint.js';
import { rankFields } from './ranks.js';
import type { ReplicaContext, SharedPorts } from './replica-context.js';
import { schemeUrl } from './server-keys.js';

/*
 * What a config-file template sees (mustache, logic-less): a plain-data view of the replica's
 * context (replica-context.ts), the one its placeholders are filled from; every port is leased
 * up front, so the dependencies' are known. The interfaces below are its fields. A url is
 * SCHEME://HOST:PORT of the service's `scheme:` (none: no url). A dependency named like one of
 * the replica's own fields (a service called "host") is only in `services`. A wildcard bind
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
  /** Every dependency, in order, then the service itself (its peers). */
  services: TemplateService[];
  /** Each dependency by name, as in `services`. */
  [dependency: string]: unknown;
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

function service(name: string, eps: readonly Endpoint[], self: number | undefined, here: string, shared?: SharedPorts): TemplateService {
  // A shared port is the service's: the same entry in every replica's ports (placeholders: {svc.port.NAME}).
  const sharedPorts = shared ? templatePorts(shared.ports, shared.host) : {};
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
      ports: { ...templatePorts(e.ports, e.host), ...sharedPorts },
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

/** The view of one replica's context its templates are rendered with. Pure. */
export function templateContext(rc: ReplicaContext): TemplateContext {
  // Its own entry among its peers: its rank (= its replica on one host; node order across nodes).
  const services = [...rc.endpoints].map(([name, eps]) =>
    service(name, eps, name === rc.name ? (rc.rank?.rank ?? rc.replica) : undefined, rc.rank?.node ?? '', rc.sharedOf?.get(name)),
  );
  const ctx: TemplateContext = {
    name: rc.name,
    replica: rc.replica,
    replicas: rc.replicas,
    host: rc.host,
    ports: templatePorts(rc.ports, rc.host, rc.sharedHosts),
    services,
  };
  if (rc.rank) Object.assign(ctx, rankFields(rc.rank));
  if (rc.port !== undefined) {
    ctx.port = rc.port;
    ctx.hostport = endpointHostPort({ host: rc.host, port: rc.port });
    const url = schemeUrl(rc.scheme, ctx.hostport);
    if (url !== null) ctx.url = url;
  }
  if (rc.gpu !== undefined) ctx.gpu = rc.gpu;
  if (rc.dir !== undefined) ctx.dir = rc.dir;
  for (const s of services) if (!OWN_FIELDS.includes(s.name)) ctx[s.name] = s;
  return ctx;
}
