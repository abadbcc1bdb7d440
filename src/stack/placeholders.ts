import { isIP } from 'node:net';
import { BerthError, EXIT } from '../errors.js';

/*
 * Placeholders in commands, env values and ready specs of a stack:
 *   {port} {replica} {name} {host}                 this replica
 *   {gpu}                                          its GPU (replicas: gpus)
 *   {svc.port} {svc.ports} {svc.url} {svc.urls}    a service this one depends on
 * "{{" is a literal "{"; a "}" on its own is always literal (so JSON args need only "{{").
 * Parsing is one left-to-right scan: templates are parsed once at load and per start.
 */

export type SelfField = 'port' | 'replica' | 'name' | 'host' | 'gpu';
export type ServiceField = 'port' | 'ports' | 'url' | 'urls';

export type Placeholder =
  | { kind: 'self'; field: SelfField; text: string }
  | { kind: 'service'; service: string; field: ServiceField; text: string };

export type TemplatePart = string | Placeholder;

export type TemplateError =
  /** `{…}` whose inside is not a known placeholder. */
  | { kind: 'unknown'; text: string }
  /** A `{` with no `}` after it. */
  | { kind: 'unclosed'; offset: number };

export interface ParsedTemplate {
  parts: TemplatePart[];
  errors: TemplateError[];
}

const SELF_FIELDS: readonly string[] = ['port', 'replica', 'name', 'host', 'gpu'];
const SERVICE_FIELDS: readonly string[] = ['port', 'ports', 'url', 'urls'];

/** Service names: letters, digits, "_" and "-", starting with a letter (no "." so {svc.port} is unambiguous). */
export const SERVICE_NAME_RE = /^[A-Za-z][A-Za-z0-9_-]*$/;

export const KNOWN_PLACEHOLDERS = '{port}, {replica}, {name}, {host}, {gpu}, {SERVICE.port}, {SERVICE.ports}, {SERVICE.url}, {SERVICE.urls}';

function classify(inner: string, text: string): Placeholder | undefined {
  if (SELF_FIELDS.includes(inner)) return { kind: 'self', field: inner as SelfField, text };
  const dot = inner.lastIndexOf('.');
  if (dot <= 0) return undefined;
  const service = inner.slice(0, dot);
  const field = inner.slice(dot + 1);
  if (!SERVICE_NAME_RE.test(service) || !SERVICE_FIELDS.includes(field)) return undefined;
  return { kind: 'service', service, field: field as ServiceField, text };
}

export function parseTemplate(template: string): ParsedTemplate {
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
    const close = template.indexOf('}', open + 1);
    if (close < 0) {
      errors.push({ kind: 'unclosed', offset: open });
      literal += template.slice(open);
      break;
    }
    const text = template.slice(open, close + 1);
    const ph = classify(template.slice(open + 1, close), text);
    if (ph) {
      if (literal !== '') parts.push(literal);
      literal = '';
      parts.push(ph);
    } else {
      errors.push({ kind: 'unknown', text });
      literal += text;
    }
    i = close + 1;
  }
  if (literal !== '') parts.push(literal);
  return { parts, errors };
}

/** The placeholders of a template, in order (for load-time checks). */
export function placeholdersOf(template: string): Placeholder[] {
  return parseTemplate(template).parts.filter((p): p is Placeholder => typeof p !== 'string');
}

export function describeTemplateError(e: TemplateError): string {
  if (e.kind === 'unclosed') return `has a "{" with no closing "}" (write {{ for a literal "{")`;
  return `uses unknown placeholder ${e.text}; known: ${KNOWN_PLACEHOLDERS} (write {{ for a literal "{")`;
}

export interface Endpoint {
  host: string;
  port: number;
}

/** The address to reach a host at: a wildcard bind is reached on loopback of its family. */
export function reachableHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '::1';
  return host;
}

/** http://HOST:PORT, with IPv6 literals bracketed. */
export function endpointUrl(e: Endpoint): string {
  const h = reachableHost(e.host);
  return `http://${isIP(h) === 6 ? `[${h}]` : h}:${e.port}`;
}

export interface ResolveContext {
  /** This service's name and replica index. */
  name: string;
  replica: number;
  host: string;
  /** This replica's port; when undefined, `{port}` is left in place for the launcher to fill. */
  port?: number;
  /** The replica's GPU (node-wide index) under `replicas: gpus`. */
  gpu?: number;
  /** Started replicas of other services, in replica order. */
  endpoints: ReadonlyMap<string, readonly Endpoint[]>;
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
    return ctx.name;
  }
  const eps = ctx.endpoints.get(p.service);
  if (!eps || eps.length === 0) {
    // Load-time checks make every referenced service a started dependency: reaching here is a bug.
    throw new BerthError(EXIT.SOFTWARE, `service "${ctx.name}": ${p.text} in ${JSON.stringify(template)} refers to service "${p.service}", which has no started replica with a port`);
  }
  switch (p.field) {
    case 'port':
      return String(eps[0]!.port);
    case 'ports':
      return eps.map((e) => String(e.port)).join(',');
    case 'url':
      return endpointUrl(eps[0]!);
    case 'urls':
      return eps.map(endpointUrl).join(',');
  }
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
