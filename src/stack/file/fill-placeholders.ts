import { portValue, type AssignedPorts } from '../../allocate/port-set.js';
import { BerthError, EXIT } from '../../errors.js';
import { endpointHostPort, endpointUrl, reachableHost, type Endpoint } from './endpoint.js';
import { formatEntries, type ListEntry } from './list-format.js';
import { describeTemplateError, parseTemplate, type OwnPart, type Placeholder } from './placeholders.js';
import { rankFields } from './ranks.js';
import type { ReplicaContext } from './replica-context.js';

/* Placeholders (placeholders.ts) filled for one replica's start from its context (replica-context.ts). */

/** A placeholder the load-time checks should have refused: berth's bug, said with where it stands. */
function notFilled(ctx: ReplicaContext, what: string, template: string, why: string): BerthError {
  return new BerthError(EXIT.SOFTWARE, `service "${ctx.name}": ${what} in ${JSON.stringify(template)}${why}`);
}

/** The URL a placeholder asks for; load-time checks refuse {svc.url} of a service without a scheme. */
function urlOf(e: Endpoint, ctx: ReplicaContext, p: Placeholder): string {
  const url = endpointUrl(e);
  if (url === null) throw new BerthError(EXIT.SOFTWARE, `service "${ctx.name}": ${p.text}: its service has "scheme: none" (no URL)`);
  return url;
}

function fill(p: Placeholder, ctx: ReplicaContext, template: string): string {
  if (p.kind === 'self') {
    if (p.field === 'port') return ctx.port === undefined ? '{port}' : String(ctx.port);
    if (p.field === 'replica') return String(ctx.replica);
    if (p.field === 'host') return ctx.host;
    if (p.field === 'gpu') {
      if (ctx.gpu === undefined) throw notFilled(ctx, '{gpu}', template, `, but replica ${ctx.replica} has no GPU`);
      return String(ctx.gpu);
    }
    if (p.field === 'name') return ctx.name;
    if (p.field === 'dir') {
      if (ctx.dir === undefined) throw notFilled(ctx, '{dir}', template, `, but replica ${ctx.replica} has no directory`);
      return ctx.dir;
    }
    if (!ctx.rank) throw notFilled(ctx, p.text, template, `, but replica ${ctx.replica} has no rank`);
    return String(rankFields(ctx.rank)[p.field]);
  }
  if (p.kind === 'template') {
    const path = ctx.templates?.get(p.template);
    if (path === undefined) throw notFilled(ctx, p.text, template, `, but replica ${ctx.replica} has no rendered template "${p.template}"`);
    return path;
  }
  if (p.kind === 'own') {
    // A port it chooses itself: known only to its launch, which fills it into the probe.
    if (ctx.learned?.has(p.port)) return p.text;
    const a = ctx.ports?.find((x) => x.name === p.port);
    if (!a) throw notFilled(ctx, p.text, template, `, but replica ${ctx.replica} has no port "${p.port}"`);
    return portAt(a, ctx.sharedHosts?.get(p.port) ?? ctx.host, p.part);
  }
  if (p.field === 'dir' || p.field === 'dirs') {
    const dirs = dirsOf(p, ctx, template);
    return p.field === 'dir' ? dirs[0]! : dirs.join(',');
  }
  const v = serviceValue(p, ctx, template);
  return typeof v === 'string' ? v : v.join(p.format?.sep ?? ',');
}

/** Every replica directory of a service of this host ({svc.dir} is the first). */
function dirsOf(p: Placeholder & { kind: 'service' }, ctx: ReplicaContext, template: string): readonly string[] {
  const dirs = ctx.dirs?.get(p.service);
  if (!dirs || dirs.length === 0) throw notFilled(ctx, p.text, template, `: service "${p.service}" has no directory here`);
  return dirs;
}

/** A service placeholder's value: one text, or a list's entries (each written by its format). */
function serviceValue(p: Placeholder & { kind: 'service' }, ctx: ReplicaContext, template: string): string | string[] {
  // An endpoint without a node is one of this host's (a stack on one host).
  const here = ctx.rank?.node ?? '';
  const written = (list: ListEntry[]) => (p.format ? formatEntries(list, p.format) : list.map((x) => x.value));
  // A shared port is the service's, not a replica's: one value, even without replicas of its own.
  const shared = p.port !== undefined ? ctx.sharedOf?.get(p.service) : undefined;
  const sp = shared?.ports.find((a) => a.name === p.port);
  if (sp) {
    const value = portAt(sp, shared!.host, p.part);
    return p.field === 'port' ? value : written([entry(p.service, 0, value, shared!.host, sp.ports[0]!, ctx.endpoints.get(p.service)?.[0]?.node ?? here)]);
  }
  const eps = ctx.endpoints.get(p.service);
  if (!eps || eps.length === 0) {
    throw notFilled(ctx, p.text, template, ` refers to service "${p.service}", which has no started replica with a port`);
  }
  if (p.port !== undefined) {
    const portOf = (e: Endpoint): AssignedPorts => {
      const a = e.ports?.find((x) => x.name === p.port);
      if (!a) throw notFilled(ctx, p.text, template, `: service "${p.service}" has no port "${p.port}"`);
      return a;
    };
    if (p.field === 'port') return portAt(portOf(eps[0]!), eps[0]!.host, p.part);
    return written(eps.map((e, i) => entry(p.service, i, portAt(portOf(e), e.host, p.part), e.host, portOf(e).ports[0]!, e.node ?? here)));
  }
  switch (p.field) {
    case 'port':
      return String(eps[0]!.port);
    case 'url':
      return urlOf(eps[0]!, ctx, p);
    case 'host':
      return reachableHost(eps[0]!.host);
    case 'hostport':
      return endpointHostPort(eps[0]!);
  }
  const values = {
    ports: (e: Endpoint) => String(e.port),
    urls: (e: Endpoint) => urlOf(e, ctx, p),
    hosts: (e: Endpoint) => reachableHost(e.host),
    hostports: endpointHostPort,
  };
  const value = values[p.field as keyof typeof values];
  return written(eps.map((e, i) => entry(p.service, i, value(e), e.host, e.port, e.node ?? here)));
}

/** One entry of a list placeholder, for its per-entry format. */
function entry(name: string, index: number, value: string, host: string, port: number, node: string): ListEntry {
  return { value, index, name, host: reachableHost(host), port, hostport: endpointHostPort({ host, port }), node };
}

/** A port's value, or where it is reached (host, HOST:PORT of its first port). */
function portAt(a: AssignedPorts, host: string, part: OwnPart | undefined): string {
  if (part === 'host') return reachableHost(host);
  if (part === 'hostport') return endpointHostPort({ host, port: a.ports[0]! });
  return portValue(a, part);
}

/** Fills every placeholder of a template. Throws BerthError(DATAERR) for a malformed one. */
export function resolveTemplate(template: string, ctx: ReplicaContext): string {
  const { parts, errors } = parseTemplate(template);
  if (errors.length > 0) {
    throw new BerthError(EXIT.DATAERR, `service "${ctx.name}": ${JSON.stringify(template)} ${describeTemplateError(errors[0]!)}`);
  }
  return parts.map((p) => (typeof p === 'string' ? p : fill(p, ctx, template))).join('');
}

/** A command's words with every placeholder filled; a {...LIST} word is one word per entry. */
export function resolveCommand(words: readonly string[], ctx: ReplicaContext): string[] {
  return words.flatMap((word) => {
    const { parts, errors } = parseTemplate(word, { commandWord: true });
    if (errors.length > 0) throw new BerthError(EXIT.DATAERR, `service "${ctx.name}": ${JSON.stringify(word)} ${describeTemplateError(errors[0]!)}`);
    const only = parts.length === 1 ? parts[0]! : undefined;
    if (only !== undefined && typeof only !== 'string' && only.kind === 'service' && only.spread) {
      if (only.field === 'dirs') return [...dirsOf(only, ctx, word)];
      const v = serviceValue(only, ctx, word);
      return typeof v === 'string' ? [v] : v;
    }
    return [parts.map((p) => (typeof p === 'string' ? p : fill(p, ctx, word))).join('')];
  });
}
