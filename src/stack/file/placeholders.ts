import { PORT_FIELDS, PORT_NAME_RE, portValue, type AssignedPorts, type PortField } from '../../allocate/port-set.js';
import { BerthError, EXIT } from '../../errors.js';
import { formatEntries, scanListFormat, type ListEntry, type ListFormat } from './list-format.js';
import type { Rank } from './ranks.js';
import { endpointHostPort, endpointUrl, reachableHost, type Endpoint } from './endpoint.js';

/*
 * Placeholders in commands, env values and ready specs of a stack:
 *   {port} {replica} {name} {host}                 this replica
 *   {dir}                                          its own directory (replica-dir.ts)
 *   {gpu}                                          its GPU (replicas: gpus)
 *   {rank} {world_size} {local_rank}               its rank among the service's replicas on
 *   {node_rank} {node_count} {node}                every node it runs on (ranks.ts)
 *   {generation}                                   which start of a job's ranks (0, 1, …)
 *   {ports.NAME} {ports.NAME.FIELD}                this replica's port NAME (its `ports:` set,
 *                                                  shared entries included)
 *   {ports.NAME.host} {ports.NAME.hostport}        where that port is reached (a shared port:
 *                                                  on replica 0's host)
 *   {svc.port} {svc.ports} {svc.url} {svc.urls}    a service this one depends on (primary port)
 *   {svc.dir} {svc.dirs}                           the directory of its replica 0 / every replica
 *                                                  (any service of this host: no dependency needed)
 *   {svc.port.NAME} {svc.ports.NAME}               its port NAME: replica 0's / every replica's
 *   {svc.port.NAME.FIELD} {svc.ports.NAME.FIELD}      (FIELD also host, hostport; a shared
 *                                                  port NAME is the one of every replica)
 * FIELD is first, last, range (LO-HI) or count; without it a block gives its first port.
 * A list ({svc.ports}, {svc.urls}, {svc.hosts}, {svc.hostports}, {svc.ports.NAME[.FIELD]})
 * may be formatted per entry, {LIST|PATTERN} or {LIST|PATTERN|SEP} (list-format.ts), and a
 * command: word that is exactly {...LIST} or {...LIST|PATTERN} becomes one argv word per entry
 * (redis-cli --cluster create h:p h:p h:p). Before this "{..." was always an unknown
 * placeholder, so no stack file that loaded changes meaning.
 * Read by position, so nothing is ambiguous: a leading "ports" is always the own set (no
 * service may be called "ports"), a FIELD only ever follows a port NAME.
 * "{{" is a literal "{"; a "}" on its own is always literal (so JSON args need only "{{").
 * Parsing is one left-to-right scan: templates are parsed once at load and per start.
 */

// Where a replica is reached: its own file, re-exported for the callers that import it from here.
export { endpointHostPort, endpointUrl, reachableHost, type Endpoint };

export type SelfField = 'port' | 'replica' | 'name' | 'host' | 'gpu' | 'dir' | RankField;
export type RankField = 'rank' | 'world_size' | 'local_rank' | 'node_rank' | 'node_count' | 'node' | 'generation';
/** What {ports.NAME.X} may ask beyond the port fields: where the port is reached. */
export type OwnPart = PortField | 'host' | 'hostport';
export type ServiceField = 'port' | 'ports' | 'url' | 'urls' | 'host' | 'hosts' | 'hostport' | 'hostports' | 'dir' | 'dirs';

export type Placeholder =
  | { kind: 'self'; field: SelfField; text: string }
  /** {ports.NAME} / {ports.NAME.FIELD}: this replica's named port. */
  | { kind: 'own'; port: string; part?: OwnPart; text: string }
  /** {templates.NAME}: the path of this replica's rendered config file NAME. */
  | { kind: 'template'; template: string; text: string }
  /** `port`/`part` only for {svc.port.NAME[.FIELD]} and {svc.ports.NAME[.FIELD]}. */
  | { kind: 'service'; service: string; field: ServiceField; port?: string; part?: OwnPart; format?: ListFormat; spread?: true; text: string };

export type TemplatePart = string | Placeholder;

export type TemplateError =
  /** `{…}` whose inside is not a known placeholder. */
  | { kind: 'unknown'; text: string }
  /** A `{` with no `}` after it. */
  | { kind: 'unclosed'; offset: number }
  /** `{LIST|PATTERN}` that is wrong: not a list, or a pattern naming no entry field. */
  | { kind: 'format'; text: string; problem: string }
  /** `{...LIST}` where it cannot stand: not a list, not a whole command word, a separator. */
  | { kind: 'spread'; text: string; problem: string };

export interface ParsedTemplate {
  parts: TemplatePart[];
  errors: TemplateError[];
}

const RANK_FIELDS: readonly string[] = ['rank', 'world_size', 'local_rank', 'node_rank', 'node_count', 'node', 'generation'];
const SELF_FIELDS: readonly string[] = ['port', 'replica', 'name', 'host', 'gpu', 'dir', ...RANK_FIELDS];
const SERVICE_FIELDS: readonly string[] = ['port', 'ports', 'url', 'urls', 'host', 'hosts', 'hostport', 'hostports', 'dir', 'dirs'];

/** Service names: letters, digits, "_" and "-", starting with a letter (no "." so {svc.port} is unambiguous). */
export const SERVICE_NAME_RE = /^[A-Za-z][A-Za-z0-9_-]*$/;

const LISTS = '{SERVICE.ports}, .urls, .hosts, .hostports, .ports.NAME';
/** What may be spread into one command word per entry: the lists, and every replica's directory. */
const SPREADABLE = `${LISTS}, .dirs`;

/** The first segment that means "this replica's own set"; no service may have this name. */
export const OWN_SET = 'ports';
/** Also not a service name: {templates.NAME} is a replica's rendered config file. */
export const OWN_TEMPLATES = 'templates';

export const KNOWN_PLACEHOLDERS =
  '{port}, {replica}, {name}, {host}, {dir}, {gpu}, {rank}, {world_size}, {local_rank}, {node_rank}, {node_count}, {node}, {generation}, {ports.NAME}, {ports.NAME.host}, {ports.NAME.hostport}, {SERVICE.port}, {SERVICE.ports}, {SERVICE.url}, {SERVICE.urls}, {SERVICE.host}, {SERVICE.hosts}, {SERVICE.hostport}, {SERVICE.hostports}, {SERVICE.port.NAME}, {SERVICE.ports.NAME}, {SERVICE.dir}, {SERVICE.dirs}, {templates.NAME}; a port NAME may end in .first, .last, .range or .count';

function portPart(seg: string | undefined): PortField | undefined | false {
  if (seg === undefined) return undefined;
  return (PORT_FIELDS as readonly string[]).includes(seg) ? (seg as PortField) : false;
}

function classify(inner: string, text: string): Placeholder | undefined {
  if (SELF_FIELDS.includes(inner)) return { kind: 'self', field: inner as SelfField, text };
  const seg = inner.split('.');
  if (seg.length < 2 || seg.length > 4) return undefined;
  if (seg[0] === OWN_TEMPLATES) {
    if (seg.length !== 2 || !PORT_NAME_RE.test(seg[1]!)) return undefined;
    return { kind: 'template', template: seg[1]!, text };
  }
  if (seg[0] === OWN_SET) {
    const part = seg[2] === 'host' || seg[2] === 'hostport' ? seg[2] : portPart(seg[2]);
    if (seg.length > 3 || !PORT_NAME_RE.test(seg[1]!) || part === false) return undefined;
    return { kind: 'own', port: seg[1]!, ...(part !== undefined ? { part } : {}), text };
  }
  const [service, field, port] = seg as [string, string, string | undefined];
  if (!SERVICE_NAME_RE.test(service) || !SERVICE_FIELDS.includes(field)) return undefined;
  if (port === undefined) return { kind: 'service', service, field: field as ServiceField, text };
  const part = seg[3] === 'host' || seg[3] === 'hostport' ? seg[3] : portPart(seg[3]);
  if ((field !== 'port' && field !== 'ports') || !PORT_NAME_RE.test(port) || part === false) return undefined;
  return { kind: 'service', service, field: field as ServiceField, port, ...(part !== undefined ? { part } : {}), text };
}

/** The mark of a list spread into one command word per entry: {...LIST}. */
export const SPREAD = '...';

export interface ParseOptions {
  /** The text is one command: word, where {...LIST} may stand (alone). */
  commandWord?: boolean;
}

export function parseTemplate(template: string, opts: ParseOptions = {}): ParsedTemplate {
  const parts: TemplatePart[] = [];
  const errors: TemplateError[] = [];
  let literal = '';
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf('{', i);
    if (open < 0) {
      literal += template.slice(i);
      break;
    }
    literal += template.slice(i, open);
    if (template[open + 1] === '{') {
      literal += '{';
      i = open + 2;
      continue;
    }
    const spread = template.startsWith(SPREAD, open + 1);
    const from = spread ? open + 1 + SPREAD.length : open + 1;
    const bar = template.indexOf('|', from);
    let close = template.indexOf('}', from);
    if (bar >= 0 && (close < 0 || bar < close) && !template.slice(from, bar).includes('{')) {
      // {LIST|PATTERN[|SEP]}: a format, whose fields are in braces of their own.
      const scan = scanListFormat(template, bar + 1);
      if (scan) {
        const text = template.slice(open, scan.end + 1);
        const ph = classify(template.slice(from, bar), text);
        const list = ph?.kind === 'service' && isList(ph);
        const dirs = ph?.kind === 'service' && ph.field === 'dirs';
        if (ph && dirs) errors.push({ kind: 'format', text, problem: `directories take no per-entry pattern: write {...${template.slice(from, bar)}} (one argument per directory) or {${template.slice(from, bar)}} (comma-joined)` });
        else if (ph && !list) errors.push({ kind: 'format', text, problem: `only a list of every replica (${LISTS}) can be ${spread ? 'spread' : 'formatted per entry'}, and {${template.slice(from, bar)}} is one value` });
        for (const problem of scan.problems) errors.push({ kind: 'format', text, problem });
        if (spread && scan.sepGiven) errors.push({ kind: 'spread', text, problem: 'a spread list is one command word per entry, so it takes no separator; write {...LIST|PATTERN}' });
        if (!ph) errors.push({ kind: 'unknown', text: template.slice(open, bar) + '}' });
        if (ph && list && scan.problems.length === 0) {
          if (literal !== '') parts.push(literal);
          literal = '';
          parts.push({ ...ph, format: scan.format, ...(spread ? { spread: true as const } : {}) });
        } else literal += text;
        i = scan.end + 1;
        continue;
      }
      close = -1;
    }
    if (close < 0) {
      errors.push({ kind: 'unclosed', offset: open });
      literal += template.slice(open);
      break;
    }
    const text = template.slice(open, close + 1);
    const ph = classify(template.slice(from, close), text);
    if (ph && spread && !(ph.kind === 'service' && (isList(ph) || ph.field === 'dirs'))) {
      errors.push({ kind: 'spread', text, problem: `only a list of every replica (${SPREADABLE}) can be spread, and {${template.slice(from, close)}} is one value` });
      literal += text;
    } else if (ph) {
      if (literal !== '') parts.push(literal);
      literal = '';
      parts.push(spread ? { ...ph, spread: true } as Placeholder : ph);
    } else {
      errors.push({ kind: 'unknown', text });
      literal += text;
    }
    i = close + 1;
  }
  if (literal !== '') parts.push(literal);
  // Kept in parts even when misplaced, so dependency checks still see the service it names.
  const spreads = parts.filter((p) => typeof p !== 'string' && p.kind === 'service' && p.spread) as Placeholder[];
  for (const p of spreads) {
    if (!opts.commandWord) errors.push({ kind: 'spread', text: p.text, problem: `a list spread into one argument per entry can only be a word of command:; here write {${p.text.slice(1 + SPREAD.length)} for the comma-joined list` });
    else if (parts.length > 1) errors.push({ kind: 'spread', text: p.text, problem: `a spread list must be a command: word of its own, but this word also holds ${JSON.stringify(template.replace(p.text, ''))}; ${spreadFix(parts, p)}` });
  }
  return { parts, errors };
}

/** What to write instead of text beside a spread: the text in its pattern, or the joined list. */
function spreadFix(parts: TemplatePart[], p: Placeholder): string {
  const i = parts.indexOf(p);
  const [pre, post] = [parts[i - 1] ?? '', parts[i + 1] ?? ''];
  const inner = p.text.slice(1 + SPREAD.length, -1);
  const plain = parts.length - (pre === '' ? 0 : 1) - (post === '' ? 0 : 1) === 1 && typeof pre === 'string' && typeof post === 'string' && !inner.includes('|') && !/[{}|]/.test(pre + post);
  if (!plain) return 'move that text into the pattern ({...LIST|PATTERN}, e.g. {...svc.hostports|--peer={}}) or into a word of its own';
  return `for one argument per entry write ${JSON.stringify(`{...${inner}|${pre}{}${post}}`)}; for one argument with the comma-joined list, ${JSON.stringify(`${pre}{${inner}}${post}`)}`;
}

/** The placeholders of a template, in order (for load-time checks); spread lists included. */
export function placeholdersOf(template: string): Placeholder[] {
  return parseTemplate(template, { commandWord: true }).parts.filter((p): p is Placeholder => typeof p !== 'string');
}

/** Whether a service placeholder is a list of every replica (it may take a per-entry format). */
function isList(p: Placeholder & { kind: 'service' }): boolean {
  return p.field === 'ports' || p.field === 'urls' || p.field === 'hosts' || p.field === 'hostports';
}

export function describeTemplateError(e: TemplateError): string {
  if (e.kind === 'unclosed') return `has a "{" with no closing "}" (write {{ for a literal "{")`;
  if (e.kind === 'format' || e.kind === 'spread') return `uses ${e.text}: ${e.problem}`;
  return `uses unknown placeholder ${e.text}; known: ${KNOWN_PLACEHOLDERS} (write {{ for a literal "{")`;
}

/** The URL a placeholder asks for; load-time checks refuse {svc.url} of a service without a scheme. */
function urlOf(e: Endpoint, ctx: ResolveContext, p: Placeholder): string {
  const url = endpointUrl(e);
  if (url === null) throw new BerthError(EXIT.SOFTWARE, `service "${ctx.name}": ${p.text}: its service has "scheme: none" (no URL)`);
  return url;
}

export interface ResolveContext {
  /** This service's name and replica index. */
  name: string;
  replica: number;
  host: string;
  /** This replica's port; when undefined, `{port}` is left in place for the launcher to fill. */
  port?: number;
  /** Names of its own learned ports: `{ports.NAME…}` of them is left in place for the launcher (its ready probe). */
  learned?: ReadonlySet<string>;
  /** The replica's GPU (node-wide index) under `replicas: gpus`. */
  gpu?: number;
  /** Its own directory ({dir}), made before its first start. */
  dir?: string;
  /** Every replica directory of the services on this host ({svc.dir}, {svc.dirs}), by service. */
  dirs?: ReadonlyMap<string, readonly string[]>;
  /** This replica's named ports ({ports.NAME}), its service's shared ports included. */
  ports?: readonly AssignedPorts[];
  /** Where each shared port is reached (replica 0's host), by name. */
  sharedHosts?: ReadonlyMap<string, string>;
  /** Shared ports of the services it depends on, by service ({svc.port.NAME} of a shared NAME). */
  sharedOf?: ReadonlyMap<string, { host: string; ports: readonly AssignedPorts[] }>;
  /** Its rank (ranks.ts); {rank} and the others need it. */
  rank?: Rank;
  /** Started replicas of other services, in replica order. */
  endpoints: ReadonlyMap<string, readonly Endpoint[]>;
  /** This replica's rendered config files, name → absolute path ({templates.NAME}). */
  templates?: ReadonlyMap<string, string>;
}

function fill(p: Placeholder, ctx: ResolveContext, template: string): string {
  if (p.kind === 'self') {
    if (p.field === 'port') return ctx.port === undefined ? '{port}' : String(ctx.port);
    if (p.field === 'replica') return String(ctx.replica);
    if (p.field === 'host') return ctx.host;
    if (p.field === 'gpu') {
      // Load-time checks allow {gpu} only with replicas: gpus: reaching here is a bug.
      if (ctx.gpu === undefined) throw new BerthError(EXIT.SOFTWARE, `service "${ctx.name}": {gpu} in ${JSON.stringify(template)}, but replica ${ctx.replica} has no GPU`);
      return String(ctx.gpu);
    }
    if (p.field === 'name') return ctx.name;
    if (p.field === 'dir') {
      if (ctx.dir === undefined) throw new BerthError(EXIT.SOFTWARE, `service "${ctx.name}": {dir} in ${JSON.stringify(template)}, but replica ${ctx.replica} has no directory`);
      return ctx.dir;
    }
    const r = ctx.rank;
    if (!r) throw new BerthError(EXIT.SOFTWARE, `service "${ctx.name}": ${p.text} in ${JSON.stringify(template)}, but replica ${ctx.replica} has no rank`);
    return p.field === 'node' ? r.node : String({ rank: r.rank, world_size: r.worldSize, local_rank: r.localRank, node_rank: r.nodeRank, node_count: r.nodeCount, generation: r.generation }[p.field]);
  }
  if (p.kind === 'template') {
    const path = ctx.templates?.get(p.template);
    // Load-time checks name every template a placeholder uses: reaching here is a bug.
    if (path === undefined) throw new BerthError(EXIT.SOFTWARE, `service "${ctx.name}": ${p.text} in ${JSON.stringify(template)}, but replica ${ctx.replica} has no rendered template "${p.template}"`);
    return path;
  }
  if (p.kind === 'own') {
    // A port it chooses itself: known only to its launch, which fills it into the probe.
    if (ctx.learned?.has(p.port)) return p.text;
    const a = ctx.ports?.find((x) => x.name === p.port);
    // Load-time checks name every port a template uses: reaching here is a bug.
    if (!a) throw new BerthError(EXIT.SOFTWARE, `service "${ctx.name}": ${p.text} in ${JSON.stringify(template)}, but replica ${ctx.replica} has no port "${p.port}"`);
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
function dirsOf(p: Placeholder & { kind: 'service' }, ctx: ResolveContext, template: string): readonly string[] {
  const dirs = ctx.dirs?.get(p.service);
  // Load-time checks allow only services of this host: reaching here is a bug.
  if (!dirs || dirs.length === 0) throw new BerthError(EXIT.SOFTWARE, `service "${ctx.name}": ${p.text} in ${JSON.stringify(template)}: service "${p.service}" has no directory here`);
  return dirs;
}

/** A service placeholder's value: one text, or a list's entries (each written by its format). */
function serviceValue(p: Placeholder & { kind: 'service' }, ctx: ResolveContext, template: string): string | string[] {
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
    // Load-time checks make every referenced service a started dependency: reaching here is a bug.
    throw new BerthError(EXIT.SOFTWARE, `service "${ctx.name}": ${p.text} in ${JSON.stringify(template)} refers to service "${p.service}", which has no started replica with a port`);
  }
  if (p.port !== undefined) {
    const portOf = (e: Endpoint): AssignedPorts => {
      const a = e.ports?.find((x) => x.name === p.port);
      if (!a) throw new BerthError(EXIT.SOFTWARE, `service "${ctx.name}": ${p.text} in ${JSON.stringify(template)}: service "${p.service}" has no port "${p.port}"`);
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
  const value = { ports: (e: Endpoint) => String(e.port), urls: (e: Endpoint) => urlOf(e, ctx, p), hosts: (e: Endpoint) => reachableHost(e.host), hostports: endpointHostPort }[p.field as 'ports' | 'urls' | 'hosts' | 'hostports'];
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
export function resolveTemplate(template: string, ctx: ResolveContext): string {
  const { parts, errors } = parseTemplate(template);
  if (errors.length > 0) {
    throw new BerthError(EXIT.DATAERR, `service "${ctx.name}": ${JSON.stringify(template)} ${describeTemplateError(errors[0]!)}`);
  }
  let out = '';
  for (const p of parts) out += typeof p === 'string' ? p : fill(p, ctx, template);
  return out;
}

/** A command's words with every placeholder filled; a {...LIST} word is one word per entry. */
export function resolveCommand(words: readonly string[], ctx: ResolveContext): string[] {
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
