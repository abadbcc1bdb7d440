import { resolve } from 'node:path';
import { isScalar, isSeq } from 'yaml';
import type { Node } from 'yaml';
import { listenAddressProblem } from '../../util/address.js';
import { DEADLINE, GRACE, parseDuration, timerProblem } from '../../util/duration.js';
import { quoteExcerpt } from '../../util/excerpt.js';
import { kindOf, scalarTextOrBool, toUint } from '../../util/yaml-values.js';
import { readDependsOnKey } from './depends-on-key.js';
import type { Draft } from './draft.js';
import { readEnvKey } from './env-key.js';
import { readNodesKey } from './nodes-key.js';
import { templateParts } from './placeholders.js';
import { readSourceKey, type SourceKey } from './port-source-key.js';
import type { YamlReader } from './ports-key.js';
import type { ServiceSpec } from './spec.js';
import { readStraysKey } from './strays-key.js';
import { readServerKey } from './server-keys.js';
import { readTemplatesKey } from './templates-key.js';

/*
 * The table of a service's keys: one small reader per key of `services.NAME`, each turning
 * its YAML value into the typed ServiceSpec (spec.ts) or reporting at the value's line. The
 * table is the one list of service keys: SERVICE_KEYS, the "allowed keys" message and the
 * schema test (the words a key takes, `choices`) all read it. Checks that need two keys of
 * one service are services-key.ts's; checks across services are stack-checks.ts's.
 */

/** What a service's keys need of the stack's parser beyond YamlReader. */
export interface StackReader extends YamlReader {
  /** The folder relative paths (cwd, templates) are resolved against. */
  readonly baseDir: string;
}

/** One service while its keys are read: the checks after them (services-key.ts) read this too. */
export interface ServiceRead {
  readonly draft: Draft;
  /** `service "NAME"`, the start of every message. */
  readonly label: string;
  readonly reader: StackReader;
  /** Each key given, at its line. */
  readonly keys: Map<string, number>;
  /** Each key whose value its reader took (not an alias that names no anchor), at its line. */
  readonly read: Map<string, number>;
  /** `ready:` as written: read once `handoff:` and the ports are known, wherever they are in the file. */
  readyText?: string;
}

/** One key's value, for its reader. */
export interface Field {
  readonly key: ServiceKey;
  readonly v: Node | null | undefined;
  readonly kLine: number;
  readonly vLine: number;
  /** The value as text, when it is a scalar. */
  readonly text: string | undefined;
  readonly service: ServiceRead;
  /** Reports at the value; `portsBroken`: the service's ports are unknown, skip checks that need them. */
  fail(msg: string, portsBroken?: boolean): void;
}

type FieldReader = ((f: Field) => void) & { readonly choices?: readonly (string | boolean)[] };

export const COMMAND_EXAMPLE = '[node, server.js, --port, "{port}"]';

/** A key that takes one of a few words, each shown with what it means ("" for nothing). */
function oneOf<W extends string>(key: string, words: Record<W, string>, set: (spec: ServiceSpec, w: W) => void, hint?: (v: Node | null | undefined) => string) {
  const shown = Object.entries(words).map(([w, why]) => `"${w}"${why ? ` (${why as string})` : ''}`);
  const alternatives = `${shown.slice(0, -1).join(', ')} or ${shown.at(-1)!}`;
  const read = (f: Field) => {
    if (f.text !== undefined && Object.hasOwn(words, f.text)) set(f.service.draft.spec, f.text as W);
    else f.fail(`${key} must be ${alternatives}, found ${kindOf(f.v)}${hint?.(f.v) ?? ''}`);
  };
  return Object.assign(read, { choices: Object.keys(words) });
}

/** A key that takes true or false. */
function flag(key: string, whenTrue: string, whenFalse: string, set: (spec: ServiceSpec, on: boolean) => void) {
  const read = (f: Field) => {
    if (f.v && isScalar(f.v) && typeof f.v.value === 'boolean') set(f.service.draft.spec, f.v.value);
    else f.fail(`${key} must be true${whenTrue ? ` (${whenTrue})` : ''} or false${whenFalse ? ` (${whenFalse})` : ''}, found ${kindOf(f.v)}`);
  };
  return Object.assign(read, { choices: [true, false] });
}

function readCommand(f: Field): void {
  const { v, vLine, text, service } = f;
  const { draft, label, reader } = service;
  if (text !== undefined) {
    f.fail(
      `command must be a list (argv), e.g. ${COMMAND_EXAMPLE}, found the text ${quoteExcerpt(text)}; berth runs no shell (write [sh, -c, "…"] if you need one)`,
    );
  } else if (!v || !isSeq(v) || v.items.length === 0) {
    f.fail(`command must be a non-empty list (argv), e.g. ${COMMAND_EXAMPLE}, found ${v && isSeq(v) ? 'an empty list' : kindOf(v)}`);
  } else {
    v.items.forEach((item, i) => {
      const it = reader.deref(item as Node, vLine, label);
      const t = scalarTextOrBool(it);
      const itLine = reader.lineOf(it, vLine);
      if (t === undefined) return reader.add(itLine, `${label}: command[${i}] must be text, found ${kindOf(it)}`);
      draft.spec.command.push(t);
      const where = `command[${i}]`;
      draft.templates.push({ where, line: itLine, parts: templateParts(t, where, itLine, label, reader, { commandWord: true }) });
    });
  }
}

function readDuration(f: Field): void {
  const { key, text } = f;
  const ms = text === undefined ? undefined : parseDuration(text);
  const problem = ms === undefined ? undefined : timerProblem(ms, key === 'ready_timeout' ? DEADLINE : GRACE);
  if (ms === undefined) f.fail(`${key} must be a duration like 500ms, 10s, 5m, found ${kindOf(f.v)}`);
  else if (problem !== undefined) f.fail(ms === 0 ? `${key} ${problem}` : `${key} ${text!.trim()} ${problem}`);
  else if (key === 'ready_timeout') f.service.draft.spec.readyTimeoutMs = ms;
  else f.service.draft.spec.stopGraceMs = ms;
}

const readSource = (f: Field) => readSourceKey(f.key as SourceKey, f.v, f.kLine, f.text, f.service.draft, f.service.label, f.fail, f.service.reader);

const NODES_ALLOWED = '"all", "others" (every node but the first) or a whole number ≥ 1 (the first N nodes of the Slurm allocation)';
const STRICT_TRUE = 'a foreign listener on its ports after ready fails the replica, 70';

/** Every key of a service, in the order the "allowed keys" message lists them. */
export const SERVICE_FIELDS = {
  command: readCommand,
  replicas: (f: Field) => {
    const { draft } = f.service;
    const n = f.text === undefined ? undefined : toUint(f.text.trim());
    if (f.text?.trim() === 'gpus') draft.spec.replicas = 'gpus';
    else if (n === undefined || n < 1) f.fail(`replicas must be a whole number ≥ 1 or "gpus", found ${kindOf(f.v)}`, true);
    else draft.spec.replicas = n;
  },
  nodes: (f: Field) => {
    const nodes = readNodesKey(f.text);
    if (nodes === undefined) f.fail(`nodes must be ${NODES_ALLOWED}, found ${kindOf(f.v)}`);
    else f.service.draft.spec.nodes = nodes;
  },
  band: readSource,
  port: readSource,
  ports: readSource,
  range: readSource,
  instance: readSource,
  host: (f: Field) => {
    const { text } = f;
    if (text === undefined || text.trim() === '') f.fail(`host must be an address such as 127.0.0.1 or ::1, found ${kindOf(f.v)}`);
    else if (listenAddressProblem(text) !== undefined) f.fail(`host ${JSON.stringify(text.trim())} ${listenAddressProblem(text)!}`);
    else f.service.draft.spec.host = text.trim();
  },
  env: (f: Field) => readEnvKey(f.v, f.vLine, f.service.label, f.service.draft, f.service.reader),
  templates: (f: Field) => {
    const { draft, label, reader } = f.service;
    const list = readTemplatesKey(f.v, f.kLine, label, reader.baseDir, reader);
    if (list) draft.spec.templates = list;
    else draft.templatesBroken = true; // reported already: its placeholders are not checked again
  },
  cwd: (f: Field) => {
    const { text } = f;
    if (text === undefined || text.trim() === '') f.fail(`cwd must be a directory path (relative to the stack file), found ${kindOf(f.v)}`);
    else f.service.draft.spec.cwd = resolve(f.service.reader.baseDir, text);
  },
  handoff: oneOf('handoff', { release: '', fd: '' }, (spec, w) => (spec.handoff = w)),
  ready: (f: Field) => {
    f.service.draft.readyLine = f.vLine;
    if (f.text === undefined) f.fail(`ready must be http://HOST:{port}/PATH, tcp, or cmd:COMMAND, found ${kindOf(f.v)}`);
    else f.service.readyText = f.text;
  },
  ready_timeout: readDuration,
  depends_on: (f: Field) => readDependsOnKey(f.v, f.vLine, f.service.label, f.service.draft, f.service.reader),
  restart: oneOf(
    'restart',
    { no: '', 'on-failure': '' },
    (spec, w) => (spec.restart.policy = w),
    (v) => (v && isScalar(v) && v.value === false ? ' (write restart: "no")' : ''),
  ),
  restart_limit: (f: Field) => {
    const n = f.text === undefined ? undefined : toUint(f.text.trim());
    if (n === undefined) f.fail(`restart_limit must be a whole number ≥ 0 (restarts after the first start), found ${kindOf(f.v)}`);
    else f.service.draft.spec.restart.limit = n;
  },
  stop_grace: readDuration,
  job: flag('job', '', '', (spec, on) => (spec.job = on)),
  logs: oneOf('logs', { file: 'log files only', attach: 'also streamed here' }, (spec, w) => (spec.logs = w)),
  strays: (f: Field) => {
    const rules = readStraysKey(f.v, f.kLine, f.service.label, f.service.reader);
    if (rules) f.service.draft.spec.strays = rules;
  },
  scheme: (f: Field) => readServerKey('scheme', f.text, f.service.draft.spec, f.fail),
  dir_owner: (f: Field) => {
    readServerKey('dir_owner', f.text, f.service.draft.spec, f.fail);
    f.service.draft.spec.dirOwnerLine = f.vLine;
  },
  strict: flag('strict', STRICT_TRUE, 'a warning', (spec, on) => (spec.strict = on)),
} satisfies Record<string, FieldReader>;

export type ServiceKey = keyof typeof SERVICE_FIELDS;
export const SERVICE_KEYS = Object.keys(SERVICE_FIELDS) as readonly ServiceKey[];

/** The words (or booleans) each key of few choices takes: the schema's enums are held to these. */
export const SERVICE_CHOICES: Readonly<Partial<Record<ServiceKey, readonly (string | boolean)[]>>> = Object.fromEntries(
  Object.entries(SERVICE_FIELDS as Record<string, FieldReader>).flatMap(([k, r]) => (r.choices ? [[k, r.choices]] : [])),
);
