import { isAlias, isMap } from 'yaml';
import type { Node, Pair } from 'yaml';
import type { Layout } from '../../layout/layout-model.js';
import { IMPLICIT_SET } from '../../allocate/port-set.js';
import { didYouMean } from '../../util/did-you-mean.js';
import { isNullish, kindOf, scalarText } from '../../util/yaml-values.js';
import type { Draft } from './draft.js';
import { OWN_SET, OWN_TEMPLATES, SERVICE_NAME_RE } from './placeholders.js';
import { resolvePorts } from './port-source-key.js';
import { readReadyKey } from './ready-key.js';
import { COMMAND_EXAMPLE, SERVICE_FIELDS, SERVICE_KEYS, type Field, type ServiceKey, type ServiceRead, type StackReader } from './service-fields.js';
import { DEFAULT_HOST, DEFAULT_RESTART_LIMIT, DEFAULT_STOP_GRACE_MS, type ServiceSpec } from './spec.js';
import { DEFAULT_SCHEME } from './server-keys.js';

/*
 * One entry of `services:`, read in one pass: its name, then each key by its reader in the
 * table (service-fields.ts), then the table of checks within the service (SERVICE_CHECKS:
 * those that need more than one of its keys). Checks across services are stack-checks.ts's.
 */

/** What the checks know beyond the service: the stack's layout, and whether it was broken (reported). */
export interface LayoutSeen {
  readonly layout: Layout | undefined;
  readonly broken: boolean;
}

type ServiceCheck = (s: ServiceRead, layout: LayoutSeen) => void;

const SERVICE_CHECKS: readonly ServiceCheck[] = [
  function commandGiven({ draft, read, label, reader }) {
    if (!read.has('command')) reader.add(draft.spec.line, `${label}: missing "command: ${COMMAND_EXAMPLE}"`);
  },
  function nodesListenEverywhere({ draft, keys, read }) {
    // Other nodes must reach it: listen on every address unless told otherwise.
    if (read.has('nodes') && !keys.has('host')) draft.spec.host = '0.0.0.0';
  },
  function limitNeedsRestart({ draft, read, label, reader }) {
    const at = read.get('restart_limit');
    if (at !== undefined && draft.spec.restart.policy !== 'on-failure') reader.add(at, `${label}: restart_limit needs "restart: on-failure"`);
  },
  function readyWithHandoff(s) {
    if (s.readyText === undefined) return;
    const ready = readReadyKey(s.readyText, s.draft.readyLine, s.label, s.draft, s.reader);
    if (ready) s.draft.spec.ready = ready;
  },
  function instanceNeedsBand({ draft, label, reader }) {
    if (!draft.instance || draft.source?.kind === 'band') return;
    reader.add(draft.instance.line, `${label}: instance needs "band: NAME" (it picks the band's instance window)`);
    draft.broken = true;
  },
  function bandInLayout({ draft, label, reader }, seen) {
    resolvePorts(draft, seen.layout, seen.broken, label, reader);
  },
];

/** One service's draft (its spec and what the stack checks need); undefined when it cannot be read at all. */
export function readService(
  pair: Pair<unknown, unknown>,
  parentLine: number,
  seen: Map<string, number>,
  layout: LayoutSeen,
  reader: StackReader,
): Draft | undefined {
  const keyNode = pair.key as Node | null;
  const line = reader.lineOf(keyNode, parentLine);
  const name = reader.keyName(pair);
  if (name === undefined) return reader.fail(line, `service names must be plain text, found ${kindOf(keyNode)}`);
  const label = `service ${JSON.stringify(name)}`;
  const broken = nameProblem(name) !== undefined;
  if (broken) reader.add(line, `${label}: ${nameProblem(name)!}`);
  const first = seen.get(name);
  if (first !== undefined) return reader.fail(line, `${label}: defined twice (first at line ${first}); service names must be unique`);
  seen.set(name, line);

  const value = reader.deref(pair.value as Node | null, line, label);
  if (isNullish(value)) return reader.fail(line, `${label}: has no settings; it needs at least "command: ${COMMAND_EXAMPLE}"`);
  if (!isMap(value)) {
    return reader.fail(reader.lineOf(value, line), `${label}: expected a mapping of settings (command, replicas, ready, …), found ${kindOf(value)}`);
  }

  const draft: Draft = { spec: defaults(name, line, reader.baseDir), templates: [], replicasLine: line, jobLine: line, readyLine: line, broken };
  const service: ServiceRead = { draft, label, reader, keys: new Map(), read: new Map() };
  for (const p of value.items) readKey(p, service);
  draft.replicasLine = service.read.get('replicas') ?? line;
  draft.jobLine = service.read.get('job') ?? line;
  for (const check of SERVICE_CHECKS) check(service, layout);
  return draft;
}

/** One key of a service by its reader, or the unknown or repeated key reported. */
function readKey(p: Pair<unknown, unknown>, service: ServiceRead): void {
  const { draft, label, reader, keys } = service;
  const kLine = reader.lineOf(p.key as Node | null, draft.spec.line);
  const key = reader.keyName(p);
  if (key === undefined || !Object.hasOwn(SERVICE_FIELDS, key)) {
    const shown = key === undefined ? 'a non-text key' : `"${key}"`;
    reader.add(kLine, `${label}: unknown key ${shown}${key ? didYouMean(key, SERVICE_KEYS) : ''}; allowed keys: ${SERVICE_KEYS.join(', ')}`);
    return;
  }
  const firstAt = keys.get(key);
  if (firstAt !== undefined) return reader.add(kLine, `${label}: "${key}" is given twice (first at line ${firstAt})`);
  keys.set(key, kLine);
  const v = reader.deref(p.value as Node | null, kLine, label);
  if (v === undefined && isAlias(p.value)) return;
  service.read.set(key, kLine);
  const vLine = reader.lineOf(v, kLine);
  const field: Field = {
    key: key as ServiceKey,
    v,
    kLine,
    vLine,
    text: scalarText(v),
    service,
    fail: (msg, portsBroken = false) => {
      reader.add(vLine, `${label}: ${msg}`);
      if (portsBroken) draft.broken = true;
    },
  };
  SERVICE_FIELDS[key as ServiceKey](field);
}

function nameProblem(name: string): string | undefined {
  if (!SERVICE_NAME_RE.test(name)) return 'invalid name; use letters, digits, "_" and "-", starting with a letter';
  if (name !== OWN_SET && name !== OWN_TEMPLATES) return undefined;
  const own = name === OWN_SET ? 'port' : 'rendered config file';
  return `the name "${name}" is taken by the placeholders ({${name}.NAME} is a replica's own ${own}); rename the service`;
}

/** A service with nothing but its name given. */
function defaults(name: string, line: number, cwd: string): ServiceSpec {
  return {
    name,
    line,
    command: [],
    replicas: 1,
    source: { kind: 'default' },
    ports: [...IMPLICIT_SET],
    shared: [],
    sharedKept: [],
    portsDeclared: false,
    host: DEFAULT_HOST,
    env: {},
    templates: [],
    cwd,
    handoff: 'release',
    dependsOn: [],
    restart: { policy: 'no', limit: DEFAULT_RESTART_LIMIT },
    stopGraceMs: DEFAULT_STOP_GRACE_MS,
    job: false,
    logs: 'file',
    strays: [],
    scheme: DEFAULT_SCHEME,
    oneShot: false,
  };
}
