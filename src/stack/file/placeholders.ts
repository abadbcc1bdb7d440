import { PORT_FIELDS, PORT_NAME_RE, type PortField } from '../../allocate/port-set.js';
import { scanListFormat, type ListFormat } from './list-format.js';

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
 */

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
  | { kind: 'unknown'; text: string }
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
  '{port}, {replica}, {name}, {host}, {dir}, {gpu}, {rank}, {world_size}, {local_rank}, {node_rank}, {node_count}, {node}, {generation}, ' +
  '{ports.NAME}, {ports.NAME.host}, {ports.NAME.hostport}, {SERVICE.port}, {SERVICE.ports}, {SERVICE.url}, {SERVICE.urls}, ' +
  '{SERVICE.host}, {SERVICE.hosts}, {SERVICE.hostport}, {SERVICE.hostports}, {SERVICE.port.NAME}, {SERVICE.ports.NAME}, ' +
  '{SERVICE.dir}, {SERVICE.dirs}, {templates.NAME}; a port NAME may end in .first, .last, .range or .count';

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
        const inner = template.slice(from, bar);
        if (ph && dirs) {
          const problem = `directories take no per-entry pattern: write {...${inner}} (one argument per directory) or {${inner}} (comma-joined)`;
          errors.push({ kind: 'format', text, problem });
        } else if (ph && !list) {
          const problem = `only a list of every replica (${LISTS}) can be ${spread ? 'spread' : 'formatted per entry'}, and {${inner}} is one value`;
          errors.push({ kind: 'format', text, problem });
        }
        for (const problem of scan.problems) errors.push({ kind: 'format', text, problem });
        if (spread && scan.sepGiven) {
          const problem = 'a spread list is one command word per entry, so it takes no separator; write {...LIST|PATTERN}';
          errors.push({ kind: 'spread', text, problem });
        }
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
      const problem = `only a list of every replica (${SPREADABLE}) can be spread, and {${template.slice(from, close)}} is one value`;
      errors.push({ kind: 'spread', text, problem });
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
    if (!opts.commandWord) {
      const joined = `{${p.text.slice(1 + SPREAD.length)}`;
      const problem = `a list spread into one argument per entry can only be a word of command:; here write ${joined} for the comma-joined list`;
      errors.push({ kind: 'spread', text: p.text, problem });
    } else if (parts.length > 1) {
      const beside = JSON.stringify(template.replace(p.text, ''));
      const problem = `a spread list must be a command: word of its own, but this word also holds ${beside}; ${spreadFix(parts, p)}`;
      errors.push({ kind: 'spread', text: p.text, problem });
    }
  }
  return { parts, errors };
}

/** What to write instead of text beside a spread: the text in its pattern, or the joined list. */
function spreadFix(parts: TemplatePart[], p: Placeholder): string {
  const i = parts.indexOf(p);
  const [pre, post] = [parts[i - 1] ?? '', parts[i + 1] ?? ''];
  const inner = p.text.slice(1 + SPREAD.length, -1);
  const alone = parts.length - (pre === '' ? 0 : 1) - (post === '' ? 0 : 1) === 1;
  const plain = alone && typeof pre === 'string' && typeof post === 'string' && !inner.includes('|') && !/[{}|]/.test(pre + post);
  if (!plain) return 'move that text into the pattern ({...LIST|PATTERN}, e.g. {...svc.hostports|--peer={}}) or into a word of its own';
  const perEntry = JSON.stringify(`{...${inner}|${pre}{}${post}}`);
  return `for one argument per entry write ${perEntry}; for one argument with the comma-joined list, ${JSON.stringify(`${pre}{${inner}}${post}`)}`;
}

/** A text's placeholders, each broken one reported where it stands (`reader`: the stack file's YamlReader; only its add is needed here). */
export function templateParts(
  text: string,
  where: string,
  line: number,
  label: string,
  reader: { add(line: number, text: string): void },
  opts?: ParseOptions,
): TemplatePart[] {
  const { parts, errors } = parseTemplate(text, opts);
  for (const e of errors) reader.add(line, `${label}: ${where} ${describeTemplateError(e)}`);
  return parts;
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
