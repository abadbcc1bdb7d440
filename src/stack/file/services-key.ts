import { resolve } from 'node:path';
import { isAlias, isMap, isScalar, isSeq } from 'yaml';
import type { Node, Pair } from 'yaml';
import { IMPLICIT_SET } from '../../allocate/port-set.js';
import type { Handoff } from '../../launch/launch-api.js';
import type { Layout } from '../../layout/layout-model.js';
import { listenAddressProblem } from '../../util/address.js';
import { DEADLINE, GRACE, parseDuration, timerProblem } from '../../util/duration.js';
import { didYouMean } from '../../util/did-you-mean.js';
import { isNullish, kindOf, scalarText, scalarTextOrBool, toUint } from '../../util/yaml-values.js';
import { readDependsOnKey } from './depends-on-key.js';
import type { Draft } from './draft.js';
import { readEnvKey } from './env-key.js';
import { readNodesKey } from './nodes-key.js';
import { OWN_SET, OWN_TEMPLATES, SERVICE_NAME_RE } from './placeholders.js';
import { readSourceKey, resolvePorts } from './port-source-key.js';
import type { YamlReader } from './ports-key.js';
import { readReadyKey } from './ready-key.js';
import { DEFAULT_HOST, DEFAULT_RESTART_LIMIT, DEFAULT_STOP_GRACE_MS, type ServiceSpec } from './spec.js';
import { readStraysKey } from './strays-key.js';
import { DEFAULT_SCHEME, readServerKey } from './server-keys.js';
import { templateParts } from './template-parts.js';
import { readTemplatesKey } from './templates-key.js';
import { quoteExcerpt } from '../../util/excerpt.js';

/*
 * One entry of `services:`: its name, every key of its settings (the keys of its own
 * section, ports, templates and nodes, read by their files), and the checks within one
 * service (ready with handoff, restart_limit with restart, instance with band). Checks
 * across services are cross-check.ts's and nodes-key.ts's.
 */

/** What a service's keys need of the stack's parser beyond YamlReader. */
export interface StackReader extends YamlReader {
  /** The folder relative paths (cwd, templates) are resolved against. */
  readonly baseDir: string;
}

export const SERVICE_KEYS = [
  'command', 'replicas', 'nodes', 'band', 'port', 'ports', 'range', 'instance', 'host', 'env', 'templates', 'cwd', 'handoff', 'ready',
  'ready_timeout', 'depends_on', 'restart', 'restart_limit', 'stop_grace', 'job', 'logs', 'strays', 'scheme', 'dir_owner', 'strict',
] as const;
const COMMAND_EXAMPLE = '[node, server.js, --port, "{port}"]';

/** One service's draft (its spec and what the cross check needs); undefined when it cannot be read at all. */
export function readService(
  pair: Pair<unknown, unknown>,
  parentLine: number,
  seen: Map<string, number>,
  layout: Layout | undefined,
  layoutBroken: boolean,
  reader: StackReader,
): Draft | undefined {
  const keyNode = pair.key as Node | null;
  const line = reader.lineOf(keyNode, parentLine);
  const name = reader.keyName(pair);
  if (name === undefined) {
    reader.add(line, `service names must be plain text, found ${kindOf(keyNode)}`);
    return undefined;
  }
  const label = `service ${JSON.stringify(name)}`;
  let broken = false;
  if (!SERVICE_NAME_RE.test(name)) {
    reader.add(line, `${label}: invalid name; use letters, digits, "_" and "-", starting with a letter`);
    broken = true;
  } else if (name === OWN_SET || name === OWN_TEMPLATES) {
    const own = name === OWN_SET ? 'port' : 'rendered config file';
    reader.add(line, `${label}: the name "${name}" is taken by the placeholders ({${name}.NAME} is a replica's own ${own}); rename the service`);
    broken = true;
  }
  const first = seen.get(name);
  if (first !== undefined) {
    reader.add(line, `${label}: defined twice (first at line ${first}); service names must be unique`);
    return undefined;
  }
  seen.set(name, line);

  const value = reader.deref(pair.value as Node | null, line, label);
  if (isNullish(value)) {
    reader.add(line, `${label}: has no settings; it needs at least "command: ${COMMAND_EXAMPLE}"`);
    return undefined;
  }
  if (!isMap(value)) {
    reader.add(reader.lineOf(value, line), `${label}: expected a mapping of settings (command, replicas, ready, …), found ${kindOf(value)}`);
    return undefined;
  }

  const spec: ServiceSpec = {
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
    cwd: reader.baseDir,
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
  const draft: Draft = { spec, templates: [], replicasLine: line, jobLine: line, readyLine: line, broken };
  const keys = new Map<string, number>();
  let hasCommand = false;
  let limitLine: number | undefined;
  let nodesLine: number | undefined;
  let readyText: string | undefined;

  for (const p of value.items) {
    const kNode = p.key as Node | null;
    const kLine = reader.lineOf(kNode, line);
    const key = reader.keyName(p);
    if (key === undefined || !(SERVICE_KEYS as readonly string[]).includes(key)) {
      const shown = key === undefined ? 'a non-text key' : `"${key}"`;
      reader.add(kLine, `${label}: unknown key ${shown}${key ? didYouMean(key, SERVICE_KEYS) : ''}; allowed keys: ${SERVICE_KEYS.join(', ')}`);
      continue;
    }
    const firstAt = keys.get(key);
    if (firstAt !== undefined) {
      reader.add(kLine, `${label}: "${key}" is given twice (first at line ${firstAt})`);
      continue;
    }
    keys.set(key, kLine);
    const v = reader.deref(p.value as Node | null, kLine, label);
    if (v === undefined && isAlias(p.value)) continue;
    const vLine = reader.lineOf(v, kLine);
    const fail = (msg: string, portsBroken = false) => {
      reader.add(vLine, `${label}: ${msg}`);
      if (portsBroken) draft.broken = true;
    };
    const text = scalarText(v);

    switch (key) {
      case 'command':
        hasCommand = true;
        if (text !== undefined) {
          fail(
            `command must be a list (argv), e.g. ${COMMAND_EXAMPLE}, found the text ${quoteExcerpt(text)}; ` +
              'berth runs no shell (write [sh, -c, "…"] if you need one)',
          );
        } else if (!v || !isSeq(v) || v.items.length === 0) {
          fail(`command must be a non-empty list (argv), e.g. ${COMMAND_EXAMPLE}, found ${v && isSeq(v) ? 'an empty list' : kindOf(v)}`);
        } else {
          v.items.forEach((item, i) => {
            const it = reader.deref(item as Node, vLine, label);
            const t = scalarTextOrBool(it);
            if (t === undefined) {
              reader.add(reader.lineOf(it, vLine), `${label}: command[${i}] must be text, found ${kindOf(it)}`);
            } else {
              spec.command.push(t);
              const where = `command[${i}]`;
              const itLine = reader.lineOf(it, vLine);
              draft.templates.push({ where, line: itLine, parts: templateParts(t, where, itLine, label, reader, { commandWord: true }) });
            }
          });
        }
        break;
      case 'replicas': {
        draft.replicasLine = kLine;
        const n = text === undefined ? undefined : toUint(text.trim());
        if (text?.trim() === 'gpus') spec.replicas = 'gpus';
        else if (n === undefined || n < 1) fail(`replicas must be a whole number ≥ 1 or "gpus", found ${kindOf(v)}`, true);
        else spec.replicas = n;
        break;
      }
      case 'nodes': {
        nodesLine = kLine;
        const nodes = readNodesKey(text);
        const allowed = '"all", "others" (every node but the first) or a whole number ≥ 1 (the first N nodes of the Slurm allocation)';
        if (nodes === undefined) fail(`nodes must be ${allowed}, found ${kindOf(v)}`);
        else spec.nodes = nodes;
        break;
      }
      case 'band':
      case 'port':
      case 'range':
      case 'instance':
      case 'ports':
        readSourceKey(key, v, kLine, text, draft, label, fail, reader);
        break;
      case 'templates': {
        const list = readTemplatesKey(v, kLine, label, reader.baseDir, reader);
        if (list) spec.templates = list;
        else draft.templatesBroken = true; // reported already: its placeholders are not checked again
        break;
      }
      case 'strays': {
        const rules = readStraysKey(v, kLine, label, reader);
        if (rules) spec.strays = rules;
        break;
      }
      case 'host':
        if (text === undefined || text.trim() === '') fail(`host must be an address such as 127.0.0.1 or ::1, found ${kindOf(v)}`);
        else if (listenAddressProblem(text) !== undefined) fail(`host ${JSON.stringify(text.trim())} ${listenAddressProblem(text)!}`);
        else spec.host = text.trim();
        break;
      case 'env':
        readEnvKey(v, vLine, label, draft, reader);
        break;
      case 'cwd':
        if (text === undefined || text.trim() === '') fail(`cwd must be a directory path (relative to the stack file), found ${kindOf(v)}`);
        else spec.cwd = resolve(reader.baseDir, text);
        break;
      case 'handoff':
        if (text !== 'release' && text !== 'fd') fail(`handoff must be "release" or "fd", found ${kindOf(v)}`);
        else spec.handoff = text as Handoff;
        break;
      case 'ready':
        draft.readyLine = vLine;
        if (text === undefined) fail(`ready must be http://HOST:{port}/PATH, tcp, or cmd:COMMAND, found ${kindOf(v)}`);
        else readyText = text;
        break;
      case 'ready_timeout':
      case 'stop_grace': {
        const ms = text === undefined ? undefined : parseDuration(text);
        const problem = ms === undefined ? undefined : timerProblem(ms, key === 'ready_timeout' ? DEADLINE : GRACE);
        if (ms === undefined) fail(`${key} must be a duration like 500ms, 10s, 5m, found ${kindOf(v)}`);
        else if (problem !== undefined) fail(ms === 0 ? `${key} ${problem}` : `${key} ${text!.trim()} ${problem}`);
        else if (key === 'ready_timeout') spec.readyTimeoutMs = ms;
        else spec.stopGraceMs = ms;
        break;
      }
      case 'depends_on':
        readDependsOnKey(v, vLine, label, draft, reader);
        break;
      case 'restart':
        if (text !== 'no' && text !== 'on-failure') {
          const hint = v && isScalar(v) && v.value === false ? ' (write restart: "no")' : '';
          fail(`restart must be "no" or "on-failure", found ${kindOf(v)}${hint}`);
        } else spec.restart.policy = text;
        break;
      case 'restart_limit': {
        limitLine = kLine;
        const n = text === undefined ? undefined : toUint(text.trim());
        if (n === undefined) fail(`restart_limit must be a whole number ≥ 0 (restarts after the first start), found ${kindOf(v)}`);
        else spec.restart.limit = n;
        break;
      }
      case 'job':
        draft.jobLine = kLine;
        if (!v || !isScalar(v) || typeof v.value !== 'boolean') fail(`job must be true or false, found ${kindOf(v)}`);
        else spec.job = v.value;
        break;
      case 'strict':
        if (!v || !isScalar(v) || typeof v.value !== 'boolean') {
          fail(`strict must be true (a foreign listener on its ports after ready fails the replica, 70) or false (a warning), found ${kindOf(v)}`);
        }
        else spec.strict = v.value;
        break;
      case 'logs':
        if (text !== 'attach' && text !== 'file') fail(`logs must be "file" (log files only) or "attach" (also streamed here), found ${kindOf(v)}`);
        else spec.logs = text;
        break;
      case 'scheme':
      case 'dir_owner':
        readServerKey(key, text, spec, fail);
        if (key === 'dir_owner') spec.dirOwnerLine = vLine;
        break;
    }
  }

  if (!hasCommand) reader.add(line, `${label}: missing "command: ${COMMAND_EXAMPLE}"`);
  if (nodesLine !== undefined) {
    // Other nodes must reach it: listen on every address unless told otherwise.
    if (!keys.has('host')) spec.host = '0.0.0.0';
  }
  if (limitLine !== undefined && spec.restart.policy !== 'on-failure') {
    reader.add(limitLine, `${label}: restart_limit needs "restart: on-failure"`);
  }
  if (readyText !== undefined) {
    const ready = readReadyKey(readyText, draft.readyLine, label, draft, reader);
    if (ready) spec.ready = ready;
  }
  if (draft.instance && draft.source?.kind !== 'band') {
    reader.add(draft.instance.line, `${label}: instance needs "band: NAME" (it picks the band's instance window)`);
    draft.broken = true;
  }
  resolvePorts(draft, layout, layoutBroken, label, reader);
  return draft;
}

