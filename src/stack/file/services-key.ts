import { resolve } from 'node:path';
import { isAlias, isMap, isScalar, isSeq } from 'yaml';
import type { Node, Pair } from 'yaml';
import { IMPLICIT_SET } from '../../allocate/port-set.js';
import type { Handoff, ReadySpec } from '../../launch/types.js';
import type { Layout } from '../../layout/types.js';
import { listenAddressProblem } from '../../util/address.js';
import { DEADLINE, GRACE, parseDuration, timerProblem } from '../../util/duration.js';
import { didYouMean, isNullish, kindOf, scalarText, scalarTextOrBool, toUint } from '../../util/yaml-source.js';
import type { Draft } from './cross-check.js';
import { readNodesKey } from './nodes-key.js';
import { describeTemplateError, OWN_SET, OWN_TEMPLATES, parseTemplate, SERVICE_NAME_RE, type ParseOptions, type TemplatePart } from './placeholders.js';
import { readSourceKey, resolvePorts } from './port-source-key.js';
import type { YamlReader } from './ports-key.js';
import { DEFAULT_HOST, DEFAULT_RESTART_LIMIT, DEFAULT_STOP_GRACE_MS, type DependCondition, type ServiceSpec } from './spec.js';
import { readStraysKey } from './strays-key.js';
import { DEFAULT_SCHEME, readServerKey } from './server-keys.js';
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
const CONDITIONS: readonly DependCondition[] = ['started', 'ready', 'completed'];
const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const COMMAND_EXAMPLE = '[node, server.js, --port, "{port}"]';

/** One service's draft (its spec and what the cross check needs); undefined when it cannot be read at all. */
export function readService(pair: Pair<unknown, unknown>, parentLine: number, seen: Map<string, number>, layout: Layout | undefined, layoutBroken: boolean, r: StackReader): Draft | undefined {
  const keyNode = pair.key as Node | null;
  const line = r.lineOf(keyNode, parentLine);
  const name = r.keyName(pair);
  if (name === undefined) {
    r.add(line, `service names must be plain text, found ${kindOf(keyNode)}`);
    return undefined;
  }
  const label = `service ${JSON.stringify(name)}`;
  let broken = false;
  if (!SERVICE_NAME_RE.test(name)) {
    r.add(line, `${label}: invalid name; use letters, digits, "_" and "-", starting with a letter`);
    broken = true;
  } else if (name === OWN_SET || name === OWN_TEMPLATES) {
    r.add(line, `${label}: the name "${name}" is taken by the placeholders ({${name}.NAME} is a replica's own ${name === OWN_SET ? 'port' : 'rendered config file'}); rename the service`);
    broken = true;
  }
  const first = seen.get(name);
  if (first !== undefined) {
    r.add(line, `${label}: defined twice (first at line ${first}); service names must be unique`);
    return undefined;
  }
  seen.set(name, line);

  const value = r.deref(pair.value as Node | null, line, label);
  if (isNullish(value)) {
    r.add(line, `${label}: has no settings; it needs at least "command: ${COMMAND_EXAMPLE}"`);
    return undefined;
  }
  if (!isMap(value)) {
    r.add(r.lineOf(value, line), `${label}: expected a mapping of settings (command, replicas, ready, …), found ${kindOf(value)}`);
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
    cwd: r.baseDir,
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
  const d: Draft = { spec, templates: [], replicasLine: line, jobLine: line, readyLine: line, broken };
  const keys = new Map<string, number>();
  let hasCommand = false;
  let limitLine: number | undefined;
  let nodesLine: number | undefined;
  let readyText: string | undefined;

  for (const p of value.items) {
    const kNode = p.key as Node | null;
    const kLine = r.lineOf(kNode, line);
    const key = r.keyName(p);
    if (key === undefined || !(SERVICE_KEYS as readonly string[]).includes(key)) {
      const shown = key === undefined ? 'a non-text key' : `"${key}"`;
      r.add(kLine, `${label}: unknown key ${shown}${key ? didYouMean(key, SERVICE_KEYS) : ''}; allowed keys: ${SERVICE_KEYS.join(', ')}`);
      continue;
    }
    const firstAt = keys.get(key);
    if (firstAt !== undefined) {
      r.add(kLine, `${label}: "${key}" is given twice (first at line ${firstAt})`);
      continue;
    }
    keys.set(key, kLine);
    const v = r.deref(p.value as Node | null, kLine, label);
    if (v === undefined && isAlias(p.value)) continue;
    const vLine = r.lineOf(v, kLine);
    const fail = (msg: string, portsBroken = false) => {
      r.add(vLine, `${label}: ${msg}`);
      if (portsBroken) d.broken = true;
    };
    const text = scalarText(v);

    switch (key) {
      case 'command':
        hasCommand = true;
        if (text !== undefined) {
          fail(`command must be a list (argv), e.g. ${COMMAND_EXAMPLE}, found the text ${quoteExcerpt(text)}; berth runs no shell (write [sh, -c, "…"] if you need one)`);
        } else if (!v || !isSeq(v) || v.items.length === 0) {
          fail(`command must be a non-empty list (argv), e.g. ${COMMAND_EXAMPLE}, found ${v && isSeq(v) ? 'an empty list' : kindOf(v)}`);
        } else {
          v.items.forEach((item, i) => {
            const it = r.deref(item as Node, vLine, label);
            const t = scalarTextOrBool(it);
            if (t === undefined) {
              r.add(r.lineOf(it, vLine), `${label}: command[${i}] must be text, found ${kindOf(it)}`);
            } else {
              spec.command.push(t);
              d.templates.push({ where: `command[${i}]`, line: r.lineOf(it, vLine), parts: templateParts(t, `command[${i}]`, r.lineOf(it, vLine), label, r, { commandWord: true }) });
            }
          });
        }
        break;
      case 'replicas': {
        d.replicasLine = kLine;
        const n = text === undefined ? undefined : toUint(text.trim());
        if (text?.trim() === 'gpus') spec.replicas = 'gpus';
        else if (n === undefined || n < 1) fail(`replicas must be a whole number ≥ 1 or "gpus", found ${kindOf(v)}`, true);
        else spec.replicas = n;
        break;
      }
      case 'nodes': {
        nodesLine = kLine;
        const nodes = readNodesKey(text);
        if (nodes === undefined) fail(`nodes must be "all", "others" (every node but the first) or a whole number ≥ 1 (the first N nodes of the Slurm allocation), found ${kindOf(v)}`);
        else spec.nodes = nodes;
        break;
      }
      case 'band':
      case 'port':
      case 'range':
      case 'instance':
      case 'ports':
        readSourceKey(key, v, kLine, text, d, label, fail, r);
        break;
      case 'templates': {
        const list = readTemplatesKey(v, kLine, label, r.baseDir, r);
        if (list) spec.templates = list;
        else d.templatesBroken = true; // reported already: its placeholders are not checked again
        break;
      }
      case 'strays': {
        const rules = readStraysKey(v, kLine, label, r);
        if (rules) spec.strays = rules;
        break;
      }
      case 'host':
        if (text === undefined || text.trim() === '') fail(`host must be an address such as 127.0.0.1 or ::1, found ${kindOf(v)}`);
        else if (listenAddressProblem(text) !== undefined) fail(`host ${JSON.stringify(text.trim())} ${listenAddressProblem(text)!}`);
        else spec.host = text.trim();
        break;
      case 'env':
        if (!v || !isMap(v)) {
          if (!isNullish(v)) fail(`env must be a mapping of variable names to text, e.g. { MODEL: tiny }, found ${kindOf(v)}`);
          break;
        }
        const envLines = new Map<string, number>();
        for (const e of v.items) {
          const eLine = r.lineOf(e.key as Node, vLine);
          const eName = r.keyName(e);
          if (eName === undefined || !ENV_NAME_RE.test(eName)) {
            r.add(eLine, `${label}: env name ${eName === undefined ? kindOf(e.key as Node) : JSON.stringify(eName)} is not a variable name (letters, digits and "_", not starting with a digit)`);
            continue;
          }
          const envFirst = envLines.get(eName);
          if (envFirst !== undefined) {
            r.add(eLine, `${label}: env ${eName} is given twice (first at line ${envFirst}); keep one`);
            continue;
          }
          envLines.set(eName, eLine);
          const ev = r.deref(e.value as Node | null, eLine, label);
          const et = scalarTextOrBool(ev);
          if (et === undefined) {
            r.add(r.lineOf(ev, eLine), `${label}: env ${eName} must be text, found ${kindOf(ev)}${isNullish(ev) ? ' (write "" for an empty value)' : ''}`);
            continue;
          }
          spec.env[eName] = et;
          d.templates.push({ where: `env ${eName}`, line: r.lineOf(ev, eLine), parts: templateParts(et, `env ${eName}`, r.lineOf(ev, eLine), label, r) });
        }
        break;
      case 'cwd':
        if (text === undefined || text.trim() === '') fail(`cwd must be a directory path (relative to the stack file), found ${kindOf(v)}`);
        else spec.cwd = resolve(r.baseDir, text);
        break;
      case 'handoff':
        if (text !== 'release' && text !== 'fd') fail(`handoff must be "release" or "fd", found ${kindOf(v)}`);
        else spec.handoff = text as Handoff;
        break;
      case 'ready':
        d.readyLine = vLine;
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
        readDependsOn(v, vLine, label, d, r);
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
        d.jobLine = kLine;
        if (!v || !isScalar(v) || typeof v.value !== 'boolean') fail(`job must be true or false, found ${kindOf(v)}`);
        else spec.job = v.value;
        break;
      case 'strict':
        if (!v || !isScalar(v) || typeof v.value !== 'boolean') fail(`strict must be true (a foreign listener on its ports after ready fails the replica, 70) or false (a warning), found ${kindOf(v)}`);
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

  if (!hasCommand) r.add(line, `${label}: missing "command: ${COMMAND_EXAMPLE}"`);
  if (nodesLine !== undefined) {
    // Other nodes must reach it: listen on every address unless told otherwise.
    if (!keys.has('host')) spec.host = '0.0.0.0';
  }
  if (limitLine !== undefined && spec.restart.policy !== 'on-failure') {
    r.add(limitLine, `${label}: restart_limit needs "restart: on-failure"`);
  }
  if (readyText !== undefined) {
    const ready = readySpec(readyText, d.readyLine, label, d, r);
    if (ready) spec.ready = ready;
  }
  if (d.instance && d.source?.kind !== 'band') {
    r.add(d.instance.line, `${label}: instance needs "band: NAME" (it picks the band's instance window)`);
    d.broken = true;
  }
  resolvePorts(d, layout, layoutBroken, label, r);
  return d;
}


/** A text's placeholders, each broken one reported where it stands. */
function templateParts(text: string, where: string, line: number, label: string, r: StackReader, opts?: ParseOptions): TemplatePart[] {
  const { parts, errors } = parseTemplate(text, opts);
  for (const e of errors) r.add(line, `${label}: ${where} ${describeTemplateError(e)}`);
  return parts;
}


function readySpec(t: string, line: number, label: string, d: Draft, r: StackReader): ReadySpec | undefined {
  const text = t.trim();
  if (text === 'tcp') {
    if (d.spec.handoff === 'fd') {
      r.add(line, `${label}: "ready: tcp" cannot work with "handoff: fd": the inherited socket already listens, so a connect succeeds before the service runs; use ready: http://127.0.0.1:{port}/PATH or cmd:COMMAND`);
      return undefined;
    }
    return { kind: 'tcp' };
  }
  if (text.startsWith('cmd:')) {
    const command = text.slice(4).trim();
    if (command === '') {
      r.add(line, `${label}: "ready: cmd:" needs a command, e.g. cmd:curl -sf http://127.0.0.1:{port}/health`);
      return undefined;
    }
    d.templates.push({ where: 'ready', line, parts: templateParts(command, 'ready', line, label, r) });
    return { kind: 'cmd', command };
  }
  if (/^https?:\/\//i.test(text)) {
    if (/^https:/i.test(text)) {
      r.add(line, `${label}: https readiness probes are not supported; probe the plain-http health endpoint, or use "ready: cmd:curl -sfk ${text}"`);
      return undefined;
    }
    const { parts, errors } = parseTemplate(text);
    for (const e of errors) r.add(line, `${label}: ready ${describeTemplateError(e)}`);
    d.templates.push({ where: 'ready', line, parts });
    if (errors.length > 0) return undefined;
    // Stand-ins only to check the URL's shape before any port is leased.
    const sample = parts.map((p) => (typeof p === 'string' ? p : p.kind === 'own' ? '1' : p.kind === 'template' ? '/t' : p.field === 'host' ? '127.0.0.1' : p.field === 'name' ? 'svc' : p.field.startsWith('url') ? 'h' : '1')).join('');
    let url: URL | undefined;
    try {
      url = new URL(sample);
    } catch {
      url = undefined;
    }
    if (!url || url.hostname === '') {
      r.add(line, `${label}: ready ${JSON.stringify(text)} is not a valid URL; expected http://HOST:{port}/PATH`);
      return undefined;
    }
    return { kind: 'http', url: text };
  }
  r.add(line, `${label}: ready must be http://HOST:{port}/PATH, tcp, or cmd:COMMAND, found ${JSON.stringify(text)}`);
  return undefined;
}


function readDependsOn(v: Node | null | undefined, line: number, label: string, d: Draft, r: StackReader): void {
  const seen = new Map<string, number>();
  const push = (service: string, condition: DependCondition, at: number) => {
    const first = seen.get(service);
    if (first !== undefined) {
      r.add(at, `${label}: depends_on lists "${service}" twice (first at line ${first})`);
      return;
    }
    seen.set(service, at);
    d.spec.dependsOn.push({ service, condition, line: at });
  };
  if (isNullish(v)) return;
  if (v && isSeq(v)) {
    for (const item of v.items) {
      const it = r.deref(item as Node, line, label);
      const name = it && isScalar(it) && typeof it.value === 'string' ? it.value : undefined;
      const at = r.lineOf(it, line);
      if (name === undefined) r.add(at, `${label}: depends_on entries must be service names, found ${kindOf(it)}`);
      else push(name, 'ready', at);
    }
    return;
  }
  if (v && isMap(v)) {
    for (const p of v.items) {
      const at = r.lineOf(p.key as Node, line);
      const name = r.keyName(p);
      if (name === undefined) {
        r.add(at, `${label}: depends_on keys must be service names, found ${kindOf(p.key as Node)}`);
        continue;
      }
      const cv = r.deref(p.value as Node | null, at, label);
      const c = scalarText(cv);
      if (c === undefined || !(CONDITIONS as readonly string[]).includes(c)) {
        r.add(r.lineOf(cv, at), `${label}: depends_on "${name}": the condition must be started, ready or completed, found ${kindOf(cv)}`);
        // Kept (the stack is refused anyway) so its placeholders are not also reported as undeclared.
        push(name, 'ready', at);
        continue;
      }
      push(name, c as DependCondition, at);
    }
    return;
  }
  r.add(r.lineOf(v, line), `${label}: depends_on must be a mapping { SERVICE: started|ready|completed } or a list of services (= ready), found ${kindOf(v)}`);
}
