import { accessSync, constants, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { isAlias, isMap, isScalar, isSeq } from 'yaml';
import type { Node, Pair } from 'yaml';
import { BerthError, EXIT } from '../errors.js';
import { checkNulBytes } from './nul-check.js';
import { quoteExcerpt } from '../util/excerpt.js';
import type { PortRange } from '../host/types.js';
import type { Handoff, ReadySpec } from '../launch/types.js';
import { DEFAULT_BAND } from '../layout/default-layout.js';
import { parseLayout } from '../layout/parse.js';
import type { Layout } from '../layout/types.js';
import { listenAddressProblem } from '../util/address.js';
import { DEADLINE, GRACE, parseDuration, timerProblem } from '../util/duration.js';
import { readInputFile } from '../util/safe-file.js';
import { didYouMean, isNullish, kindOf, readReason, scalarText, scalarTextOrBool, toUint, YamlSource } from '../util/yaml-source.js';
import { CrossCheck, type Draft } from './cross-check.js';
import { checkNodes } from './nodes-check.js';
import { describeTemplateError, OWN_SET, OWN_TEMPLATES, parseTemplate, SERVICE_NAME_RE, type TemplatePart } from './placeholders.js';
import { readPortsKey, type YamlReader } from './ports-key.js';
import { readTemplatesKey } from './templates-key.js';
import { IMPLICIT_SET, type PortEntry } from '../allocate/port-set.js';
import { shownPath } from './stack-messages.js';
import {
  DEFAULT_HOST,
  DEFAULT_RESTART_LIMIT,
  DEFAULT_STOP_GRACE_MS,
  type DependCondition,
  type ServiceSpec,
  type StackSpec,
} from './spec.js';

/*
 * Stack file (YAML), see StackSpec for the meaning of each field:
 *
 *   layout: ./layout.yaml          # or inline "bands:" (layout syntax); default: built-in
 *   x-common: &common { … }        # "x-" keys are ignored: a place for anchors
 *   services:
 *     NAME:
 *       command: [PROGRAM, ARG…]   # required; argv, no shell
 *       replicas: 2                # or "gpus": one per GPU of the Slurm job, on window = GPU index
 *       nodes: all                 # or N, or others (Slurm): every node of the allocation / its first N / all but the first
 *       band: engines              # or port: P | port: none | range: LO-HI; instance: N
 *       ports: { http: 1, dist: { block: 32 } }   # named ports (ports-key.ts); default one, "port"
 *       host: 127.0.0.1
 *       env: { KEY: value }
 *       cwd: ./dir                 # relative to the stack file; default its folder
 *       handoff: release | fd
 *       ready: http://127.0.0.1:{port}/health | tcp | cmd:COMMAND
 *       ready_timeout: 10m
 *       depends_on: { other: started | ready | completed }   # or [other] (= ready)
 *       restart: no | on-failure
 *       restart_limit: 3
 *       stop_grace: 10s
 *       job: true
 *       logs: file | attach
 *
 * Which services get a port: one with band/port/range; one using {port} or `ready: tcp`;
 * every non-job service unless it says `port: none`. So a job (a client) gets none unless
 * it asks. Services without band/port/range take band "default" of the layout, or the
 * built-in default band when the layout has none.
 *
 * Every problem is collected and reported at once, "file:line: service "x": …" per line.
 */

const TOP_KEYS = ['layout', 'bands', 'services'] as const;
export const SERVICE_KEYS = [
  'command', 'replicas', 'nodes', 'band', 'port', 'ports', 'range', 'instance', 'host', 'env', 'templates', 'cwd', 'handoff', 'ready',
  'ready_timeout', 'depends_on', 'restart', 'restart_limit', 'stop_grace', 'job', 'logs',
] as const;
const CONDITIONS: readonly DependCondition[] = ['started', 'ready', 'completed'];
const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const EXAMPLE = 'services: { NAME: { command: [PROGRAM, ARG…] } }';
const COMMAND_EXAMPLE = '[node, server.js, --port, "{port}"]';

class StackParser extends YamlSource {
  private layoutBroken = false;
  private readonly reader: YamlReader = {
    deref: (n, l, w) => this.deref(n, l, w),
    lineOf: (n, f) => this.lineOf(n, f),
    add: (l, t) => this.add(l, t),
    keyName: (p) => this.keyName(p),
  };

  constructor(
    text: string,
    file: string,
    private readonly baseDir: string,
  ) {
    super(text, file);
  }

  private keyName(pair: Pair<unknown, unknown>): string | undefined {
    const k = pair.key as Node | null;
    return k !== null && isScalar(k) && k.value !== null ? String(k.value) : undefined;
  }

  parse(): StackSpec | undefined {
    if (!this.parseText('a stack')) return undefined;
    const top = this.deref(this.doc.contents as Node | null, 1, 'top level');
    if (isNullish(top)) {
      this.add(1, `the stack is empty; expected ${EXAMPLE}`);
      return undefined;
    }
    if (!isMap(top)) {
      this.add(this.lineOf(top, 1), `the top level must be a mapping with a "services" key, found ${kindOf(top)}; expected ${EXAMPLE}`);
      return undefined;
    }
    const pairs = new Map<string, Pair<unknown, unknown>>();
    for (const pair of top.items) {
      const line = this.lineOf(pair.key as Node, 1);
      const name = this.keyName(pair);
      if (name !== undefined && (TOP_KEYS as readonly string[]).includes(name)) {
        const first = pairs.get(name);
        if (first) this.add(line, `"${name}" appears twice (first at line ${this.lineOf(first.key as Node, 1)}); merge them into one`);
        else pairs.set(name, pair);
        continue;
      }
      if (name?.startsWith('x-')) continue; // extension keys, a home for &anchors (as in compose files)
      const shown = name === undefined ? 'a non-text key' : `"${name}"`;
      this.add(line, `unknown top-level key ${shown}${name ? didYouMean(name, TOP_KEYS) : ''}; allowed keys are ${TOP_KEYS.map((k) => `"${k}"`).join(', ')} (and "x-…" for anchors)`);
    }

    const layoutPair = pairs.get('layout');
    const bandsPair = pairs.get('bands');
    let layout: Layout | undefined;
    if (layoutPair && bandsPair) {
      this.add(this.lineOf(bandsPair.key as Node, 1), `give either "layout: FILE" or inline "bands:", not both (layout is at line ${this.lineOf(layoutPair.key as Node, 1)})`);
      this.layoutBroken = true;
    } else if (layoutPair) layout = this.layoutFile(layoutPair);
    else if (bandsPair) layout = this.inlineLayout(bandsPair, top.items);

    const servicesPair = pairs.get('services');
    if (!servicesPair) {
      this.add(this.lineOf(top, 1), `no "services" key at the top level; expected ${EXAMPLE}`);
      return undefined;
    }
    const sLine = this.lineOf(servicesPair.key as Node, 1);
    const sNode = this.deref(servicesPair.value as Node | null, sLine, '"services"');
    if (isNullish(sNode)) {
      this.add(sLine, `"services" is empty; define at least one service, e.g. ${EXAMPLE}`);
      return undefined;
    }
    if (!isMap(sNode)) {
      this.add(this.lineOf(sNode, sLine), `"services" must be a mapping of service names to their settings, found ${kindOf(sNode)}; expected ${EXAMPLE}`);
      return undefined;
    }
    if (sNode.items.length === 0) {
      this.add(this.lineOf(sNode, sLine), `"services" is empty; define at least one service, e.g. ${EXAMPLE}`);
      return undefined;
    }
    const drafts: Draft[] = [];
    const seen = new Map<string, number>();
    for (const pair of sNode.items) {
      const d = this.service(pair, sLine, seen, layout);
      if (d) drafts.push(d);
    }
    new CrossCheck((line, text) => this.add(line, text), drafts, layout).run();
    checkNodes(drafts.map((d) => d.spec), (line, text) => this.add(line, text));
    const spec: StackSpec = { file: this.file, dir: this.baseDir, services: drafts.map((d) => d.spec) };
    if (layout) spec.layout = layout;
    return spec;
  }

  // ---- layout -------------------------------------------------------------------------

  private layoutFile(pair: Pair<unknown, unknown>): Layout | undefined {
    const line = this.lineOf(pair.key as Node, 1);
    const v = this.deref(pair.value as Node | null, line, '"layout"');
    const rel = scalarText(v);
    if (rel === undefined || rel.trim() === '') {
      this.add(this.lineOf(v, line), `"layout" must be the path of a layout file (relative to this stack file), found ${kindOf(v)}`);
      this.layoutBroken = true;
      return undefined;
    }
    const abs = resolve(this.baseDir, rel);
    const shown = shownPath(abs);
    let text: string;
    try {
      text = readInputFile(abs);
    } catch (e) {
      this.add(line, `layout ${JSON.stringify(rel)}: cannot read ${shown}: ${readReason(e)}`);
      this.layoutBroken = true;
      return undefined;
    }
    try {
      return parseLayout(text, shown);
    } catch (e) {
      this.layoutBroken = true;
      if (!(e instanceof BerthError)) throw e;
      // The layout's own "file:line:" messages; listed where the stack names the layout.
      const errors = (e.details?.errors as string[] | undefined) ?? [e.message];
      for (const text of errors) this.problems.push({ line, text });
      return undefined;
    }
  }

  /**
   * Inline `bands:` are read by the layout parser itself, so both accept the same syntax and
   * say the same things. It is given the stack text with every other line blanked, which
   * keeps line numbers right. A one-line (JSON) stack falls back to the bands alone.
   */
  private inlineLayout(pair: Pair<unknown, unknown>, topItems: Pair<unknown, unknown>[]): Layout | undefined {
    const keyNode = pair.key as Node;
    const valueNode = pair.value as Node | null;
    const first = this.lineOf(keyNode, 1);
    const endOffset = valueNode?.range?.[1] ?? keyNode.range?.[1] ?? 0;
    const last = Math.max(first, this.lc.linePos(Math.max(0, endOffset - 1)).line);
    const shared = this.reachesOutside(valueNode, first, last) || topItems.some((p) => p !== pair && this.lineOf(p.key as Node, 0) >= first && this.lineOf(p.key as Node, 0) <= last);
    let text: string;
    if (!shared) {
      const lines = this.text.split('\n');
      text = lines.map((l, i) => (i + 1 >= first && i + 1 <= last ? l : '')).join('\n');
    } else {
      text = `${'\n'.repeat(first - 1)}bands: ${JSON.stringify(this.plain(valueNode))}\n`;
    }
    try {
      return { ...parseLayout(text, this.file), source: this.file };
    } catch (e) {
      this.layoutBroken = true;
      if (!(e instanceof BerthError)) throw e;
      const errors = (e.details?.errors as string[] | undefined) ?? [e.message];
      for (const t of errors) {
        const m = /^.*?:(\d+): /.exec(t);
        this.problems.push({ line: m ? Number(m[1]) : first, text: t });
      }
      return undefined;
    }
  }

  // ---- one service --------------------------------------------------------------------

  private service(pair: Pair<unknown, unknown>, parentLine: number, seen: Map<string, number>, layout: Layout | undefined): Draft | undefined {
    const keyNode = pair.key as Node | null;
    const line = this.lineOf(keyNode, parentLine);
    const name = this.keyName(pair);
    if (name === undefined) {
      this.add(line, `service names must be plain text, found ${kindOf(keyNode)}`);
      return undefined;
    }
    const label = `service ${JSON.stringify(name)}`;
    let broken = false;
    if (!SERVICE_NAME_RE.test(name)) {
      this.add(line, `${label}: invalid name; use letters, digits, "_" and "-", starting with a letter`);
      broken = true;
    } else if (name === OWN_SET || name === OWN_TEMPLATES) {
      this.add(line, `${label}: the name "${name}" is taken by the placeholders ({${name}.NAME} is a replica's own ${name === OWN_SET ? 'port' : 'rendered config file'}); rename the service`);
      broken = true;
    }
    const first = seen.get(name);
    if (first !== undefined) {
      this.add(line, `${label}: defined twice (first at line ${first}); service names must be unique`);
      return undefined;
    }
    seen.set(name, line);

    const value = this.deref(pair.value as Node | null, line, label);
    if (isNullish(value)) {
      this.add(line, `${label}: has no settings; it needs at least "command: ${COMMAND_EXAMPLE}"`);
      return undefined;
    }
    if (!isMap(value)) {
      this.add(this.lineOf(value, line), `${label}: expected a mapping of settings (command, replicas, ready, …), found ${kindOf(value)}`);
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
      portsDeclared: false,
      host: DEFAULT_HOST,
      env: {},
      templates: [],
      cwd: this.baseDir,
      handoff: 'release',
      dependsOn: [],
      restart: { policy: 'no', limit: DEFAULT_RESTART_LIMIT },
      stopGraceMs: DEFAULT_STOP_GRACE_MS,
      job: false,
      logs: 'file',
    };
    const d: Draft = { spec, templates: [], replicasLine: line, jobLine: line, readyLine: line, broken };
    const keys = new Map<string, number>();
    let hasCommand = false;
    let limitLine: number | undefined;
    let nodesLine: number | undefined;
    let readyText: string | undefined;

    for (const p of value.items) {
      const kNode = p.key as Node | null;
      const kLine = this.lineOf(kNode, line);
      const key = this.keyName(p);
      if (key === undefined || !(SERVICE_KEYS as readonly string[]).includes(key)) {
        const shown = key === undefined ? 'a non-text key' : `"${key}"`;
        this.add(kLine, `${label}: unknown key ${shown}${key ? didYouMean(key, SERVICE_KEYS) : ''}; allowed keys: ${SERVICE_KEYS.join(', ')}`);
        continue;
      }
      const firstAt = keys.get(key);
      if (firstAt !== undefined) {
        this.add(kLine, `${label}: "${key}" is given twice (first at line ${firstAt})`);
        continue;
      }
      keys.set(key, kLine);
      const v = this.deref(p.value as Node | null, kLine, label);
      if (v === undefined && isAlias(p.value)) continue;
      const vLine = this.lineOf(v, kLine);
      const fail = (msg: string, portsBroken = false) => {
        this.add(vLine, `${label}: ${msg}`);
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
              const it = this.deref(item as Node, vLine, label);
              const t = scalarTextOrBool(it);
              if (t === undefined) {
                this.add(this.lineOf(it, vLine), `${label}: command[${i}] must be text, found ${kindOf(it)}`);
              } else {
                spec.command.push(t);
                d.templates.push({ where: `command[${i}]`, line: this.lineOf(it, vLine), parts: this.template(t, `command[${i}]`, this.lineOf(it, vLine), label) });
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
          const n = text === undefined ? undefined : toUint(text.trim());
          if (text?.trim() === 'all' || text?.trim() === 'others') spec.nodes = text.trim() as 'all' | 'others';
          else if (n === undefined || n < 1) fail(`nodes must be "all", "others" (every node but the first) or a whole number ≥ 1 (the first N nodes of the Slurm allocation), found ${kindOf(v)}`);
          else spec.nodes = n;
          break;
        }
        case 'band':
          if (text === undefined || text.trim() === '') fail(`band must be the name of a band of the layout, found ${kindOf(v)}`, true);
          else d.source = this.setSource(d, { kind: 'band', name: text.trim(), line: kLine }, label);
          break;
        case 'port': {
          if (text?.trim() === 'none') {
            d.source = this.setSource(d, { kind: 'none', line: kLine }, label);
            break;
          }
          const n = text === undefined ? undefined : toUint(text.trim());
          if (n === undefined || n < 1 || n > 65535) fail(`port must be a TCP port 1-65535 or "none", found ${kindOf(v)}`, true);
          else d.source = this.setSource(d, { kind: 'port', port: n, line: kLine }, label);
          break;
        }
        case 'ports': {
          d.portsLine = kLine;
          spec.portsDeclared = true;
          const entries = readPortsKey(v, kLine, label, this.reader);
          if (entries) {
            spec.ports = entries.filter((e) => e.kind !== 'shared');
            spec.shared = entries.flatMap((e): PortEntry[] => (e.kind !== 'shared' ? [] : e.count === 1 ? [{ name: e.name, kind: 'single' }] : [{ name: e.name, kind: 'block', count: e.count }]));
          }
          else d.portsBroken = d.broken = true;
          break;
        }
        case 'templates': {
          const list = readTemplatesKey(v, kLine, label, this.baseDir, this.reader);
          if (list) spec.templates = list;
          else d.templatesBroken = true; // reported already: its placeholders are not checked again
          break;
        }
        case 'range': {
          const r = text === undefined ? undefined : parseRangeText(text);
          if (!r) fail(`range must be LO-HI with 1 ≤ LO ≤ HI ≤ 65535 (e.g. 20000-20099), found ${kindOf(v)}`, true);
          else d.source = this.setSource(d, { kind: 'range', range: r, line: kLine }, label);
          break;
        }
        case 'instance': {
          const n = text === undefined ? undefined : toUint(text.trim());
          if (n === undefined) fail(`instance must be a whole number ≥ 0, found ${kindOf(v)}`, true);
          else d.instance = { n, line: kLine };
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
            const eLine = this.lineOf(e.key as Node, vLine);
            const eName = this.keyName(e);
            if (eName === undefined || !ENV_NAME_RE.test(eName)) {
              this.add(eLine, `${label}: env name ${eName === undefined ? kindOf(e.key as Node) : JSON.stringify(eName)} is not a variable name (letters, digits and "_", not starting with a digit)`);
              continue;
            }
            const envFirst = envLines.get(eName);
            if (envFirst !== undefined) {
              this.add(eLine, `${label}: env ${eName} is given twice (first at line ${envFirst}); keep one`);
              continue;
            }
            envLines.set(eName, eLine);
            const ev = this.deref(e.value as Node | null, eLine, label);
            const et = scalarTextOrBool(ev);
            if (et === undefined) {
              this.add(this.lineOf(ev, eLine), `${label}: env ${eName} must be text, found ${kindOf(ev)}${isNullish(ev) ? ' (write "" for an empty value)' : ''}`);
              continue;
            }
            spec.env[eName] = et;
            d.templates.push({ where: `env ${eName}`, line: this.lineOf(ev, eLine), parts: this.template(et, `env ${eName}`, this.lineOf(ev, eLine), label) });
          }
          break;
        case 'cwd':
          if (text === undefined || text.trim() === '') fail(`cwd must be a directory path (relative to the stack file), found ${kindOf(v)}`);
          else spec.cwd = resolve(this.baseDir, text);
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
          this.dependsOn(v, vLine, label, d);
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
        case 'logs':
          if (text !== 'attach' && text !== 'file') fail(`logs must be "file" (log files only) or "attach" (also streamed here), found ${kindOf(v)}`);
          else spec.logs = text;
          break;
      }
    }

    if (!hasCommand) this.add(line, `${label}: missing "command: ${COMMAND_EXAMPLE}"`);
    if (nodesLine !== undefined) {
      // Other nodes must reach it: listen on every address unless told otherwise.
      if (!keys.has('host')) spec.host = '0.0.0.0';
    }
    if (limitLine !== undefined && spec.restart.policy !== 'on-failure') {
      this.add(limitLine, `${label}: restart_limit needs "restart: on-failure"`);
    }
    if (readyText !== undefined) {
      const ready = this.readySpec(readyText, d.readyLine, label, d);
      if (ready) spec.ready = ready;
    }
    if (d.instance && d.source?.kind !== 'band') {
      this.add(d.instance.line, `${label}: instance needs "band: NAME" (it picks the band's instance window)`);
      d.broken = true;
    }
    this.resolvePorts(d, layout, label);
    return d;
  }

  private setSource(d: Draft, s: NonNullable<Draft['source']>, label: string): Draft['source'] {
    if (d.source) {
      const was = d.source.kind === 'none' ? 'port: none' : d.source.kind;
      this.add(s.line, `${label}: give one of band, port or range (${was} is already given at line ${d.source.line})`);
      d.broken = true;
      return d.source;
    }
    return s;
  }

  private template(text: string, where: string, line: number, label: string): TemplatePart[] {
    const { parts, errors } = parseTemplate(text);
    for (const e of errors) this.add(line, `${label}: ${where} ${describeTemplateError(e)}`);
    return parts;
  }

  private readySpec(t: string, line: number, label: string, d: Draft): ReadySpec | undefined {
    const text = t.trim();
    if (text === 'tcp') {
      if (d.spec.handoff === 'fd') {
        this.add(line, `${label}: "ready: tcp" cannot work with "handoff: fd": the inherited socket already listens, so a connect succeeds before the service runs; use ready: http://127.0.0.1:{port}/PATH or cmd:COMMAND`);
        return undefined;
      }
      return { kind: 'tcp' };
    }
    if (text.startsWith('cmd:')) {
      const command = text.slice(4).trim();
      if (command === '') {
        this.add(line, `${label}: "ready: cmd:" needs a command, e.g. cmd:curl -sf http://127.0.0.1:{port}/health`);
        return undefined;
      }
      d.templates.push({ where: 'ready', line, parts: this.template(command, 'ready', line, label) });
      return { kind: 'cmd', command };
    }
    if (/^https?:\/\//i.test(text)) {
      if (/^https:/i.test(text)) {
        this.add(line, `${label}: https readiness probes are not supported; probe the plain-http health endpoint, or use "ready: cmd:curl -sfk ${text}"`);
        return undefined;
      }
      const { parts, errors } = parseTemplate(text);
      for (const e of errors) this.add(line, `${label}: ready ${describeTemplateError(e)}`);
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
        this.add(line, `${label}: ready ${JSON.stringify(text)} is not a valid URL; expected http://HOST:{port}/PATH`);
        return undefined;
      }
      return { kind: 'http', url: text };
    }
    this.add(line, `${label}: ready must be http://HOST:{port}/PATH, tcp, or cmd:COMMAND, found ${JSON.stringify(text)}`);
    return undefined;
  }

  private dependsOn(v: Node | null | undefined, line: number, label: string, d: Draft): void {
    const seen = new Map<string, number>();
    const push = (service: string, condition: DependCondition, at: number) => {
      const first = seen.get(service);
      if (first !== undefined) {
        this.add(at, `${label}: depends_on lists "${service}" twice (first at line ${first})`);
        return;
      }
      seen.set(service, at);
      d.spec.dependsOn.push({ service, condition, line: at });
    };
    if (isNullish(v)) return;
    if (v && isSeq(v)) {
      for (const item of v.items) {
        const it = this.deref(item as Node, line, label);
        const name = it && isScalar(it) && typeof it.value === 'string' ? it.value : undefined;
        const at = this.lineOf(it, line);
        if (name === undefined) this.add(at, `${label}: depends_on entries must be service names, found ${kindOf(it)}`);
        else push(name, 'ready', at);
      }
      return;
    }
    if (v && isMap(v)) {
      for (const p of v.items) {
        const at = this.lineOf(p.key as Node, line);
        const name = this.keyName(p);
        if (name === undefined) {
          this.add(at, `${label}: depends_on keys must be service names, found ${kindOf(p.key as Node)}`);
          continue;
        }
        const cv = this.deref(p.value as Node | null, at, label);
        const c = scalarText(cv);
        if (c === undefined || !(CONDITIONS as readonly string[]).includes(c)) {
          this.add(this.lineOf(cv, at), `${label}: depends_on "${name}": the condition must be started, ready or completed, found ${kindOf(cv)}`);
          // Kept (the stack is refused anyway) so its placeholders are not also reported as undeclared.
          push(name, 'ready', at);
          continue;
        }
        push(name, c as DependCondition, at);
      }
      return;
    }
    this.add(this.lineOf(v, line), `${label}: depends_on must be a mapping { SERVICE: started|ready|completed } or a list of services (= ready), found ${kindOf(v)}`);
  }

  /** Band lookup and window checks need the layout; everything else is checked across services. */
  private resolvePorts(d: Draft, layout: Layout | undefined, label: string): void {
    const s = d.source;
    if (!s) return; // inferred in the cross check, once templates are known
    if (s.kind === 'none') d.spec.source = { kind: 'none' };
    else if (s.kind === 'port') d.spec.source = { kind: 'port', port: s.port };
    else if (s.kind === 'range') d.spec.source = { kind: 'range', range: s.range };
    else {
      const band = layout?.bands.find((b) => b.name === s.name);
      if (!band) {
        // "default" without a layout band of that name is the built-in one, as for services without a source.
        if (s.name === DEFAULT_BAND) {
          d.spec.source = { kind: 'default' };
          if (d.instance && d.instance.n > 0) this.add(d.instance.line, `${label}: instance ${d.instance.n} needs a band with a window; the built-in band "default" is one instance (0)`);
          return;
        }
        if (this.layoutBroken) return;
        d.broken = true;
        const names = layout ? layout.bands.map((b) => b.name) : [DEFAULT_BAND];
        const where = layout ? `the layout (${layout.source})` : 'the built-in layout; add "layout: FILE" or inline "bands:"';
        this.add(s.line, `${label}: band "${s.name}" is not in ${where}${didYouMean(s.name, names)}; bands: ${names.join(', ') || 'none'}`);
        return;
      }
      const instance = d.instance?.n ?? 0;
      d.spec.source = { kind: 'band', band, instance };
      if (band.window === undefined && instance > 0) {
        this.add(d.instance!.line, `${label}: instance ${instance} needs band "${band.name}" to have a window; a band without "window:" is one instance (0)`);
        d.broken = true;
      }
    }
  }
}

function parseRangeText(text: string): PortRange | undefined {
  const t = text.trim();
  const dash = t.indexOf('-');
  if (dash < 0) return undefined;
  const lo = toUint(t.slice(0, dash).trim());
  const hi = toUint(t.slice(dash + 1).trim());
  if (lo === undefined || hi === undefined || lo < 1 || hi > 65535 || lo > hi) return undefined;
  return { lo, hi };
}

/**
 * Parses and validates a stack. `baseDir` is the folder relative paths (layout, cwd) are
 * resolved against, normally the stack file's. Throws one BerthError(DATAERR) listing every
 * problem, "file:line: …" per line (details.errors holds the same lines).
 */
export function parseStack(text: string, file: string, baseDir: string): StackSpec {
  const p = new StackParser(text, file, resolve(baseDir));
  const spec = p.parse();
  if (p.problems.length > 0 || !spec) throw p.error();
  checkNulBytes(spec); // issue 22 §12: a "\0" would otherwise crash the replica at spawn
  return spec;
}

/** Reads and parses a stack file; an unreadable file is a DATAERR naming it. */
export function loadStack(file: string): StackSpec {
  let text: string;
  try {
    text = readInputFile(file);
  } catch (err) {
    throw new BerthError(EXIT.DATAERR, `${file}: cannot read stack file: ${readReason(err)}`, { file, code: (err as NodeJS.ErrnoException).code });
  }
  const spec = parseStack(text, file, resolve(file, '..'));
  checkCwds(spec);
  return spec;
}

/**
 * Each service's cwd must be a directory now: a missing one would otherwise surface at spawn
 * as the command "not found", a file as ENOTDIR. (parseStack alone does not look at the disk.)
 */
function checkCwds(spec: StackSpec): void {
  const errors: string[] = [];
  for (const s of spec.services) {
    let why: string | undefined;
    try {
      if (!statSync(s.cwd).isDirectory()) why = 'is not a directory';
      else accessSync(s.cwd, constants.X_OK);
    } catch (e) {
      why = `cannot be used: ${readReason(e)}`;
    }
    if (why !== undefined) errors.push(`${spec.file}:${s.line}: service ${JSON.stringify(s.name)}: cwd ${shownPath(s.cwd)} ${why}`);
  }
  if (errors.length > 0) throw new BerthError(EXIT.DATAERR, errors.join('\n'), { file: spec.file, errors });
}
