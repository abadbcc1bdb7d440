import { accessSync, constants, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { isMap, isScalar } from 'yaml';
import type { Node, Pair } from 'yaml';
import { BerthError, EXIT } from '../../errors.js';
import type { Layout } from '../../layout/layout-model.js';
import { nulProblems } from '../../util/nul-bytes.js';
import { userIds } from '../../util/user-ids.js';
import { readInputFile } from '../../util/safe-file.js';
import { didYouMean } from '../../util/did-you-mean.js';
import { readReason, YamlSource } from '../../util/yaml-source.js';
import { isNullish, kindOf } from '../../util/yaml-values.js';
import { readBandsKey, readLayoutKey, type BandsReader } from './bands-key.js';
import type { Draft } from './draft.js';
import type { StackReader } from './service-fields.js';
import { readService } from './services-key.js';
import { shownPath } from './shown-path.js';
import { checkStack } from './stack-checks.js';
import type { StackSpec } from './spec.js';

/*
 * Stack file (YAML): docs/stack.md lists its keys, StackSpec their meaning. Which services get
 * a port: one with band/port/range; one using {port} or `ready: tcp`; every non-job service
 * unless it says `port: none` (so a job, a client, gets none unless it asks). Services without
 * band/port/range take band "default" of the layout, or the built-in default band when it has none.
 * Every problem is collected and reported at once, "file:line: service "x": …" per line.
 */

const TOP_KEYS = ['layout', 'bands', 'services', 'strict'] as const;
const EXAMPLE = 'services: { NAME: { command: [PROGRAM, ARG…] } }';

class StackParser extends YamlSource {
  private readonly reader: StackReader & BandsReader;

  constructor(
    text: string,
    file: string,
    private readonly baseDir: string,
  ) {
    super(text, file);
    this.reader = {
      file: this.file,
      baseDir: this.baseDir,
      text: this.text,
      deref: (n, l, w) => this.deref(n, l, w),
      lineOf: (n, f) => this.lineOf(n, f),
      add: (l, t) => this.add(l, t),
      fail: (l, t) => this.fail(l, t),
      keyName: (p) => this.keyName(p),
      linePos: (offset) => this.lc.linePos(offset).line,
      reachesOutside: (n, first, last) => this.reachesOutside(n, first, last),
      plain: (n) => this.plain(n),
      addAsIs: (line, text) => this.problems.push({ line, text }),
    };
  }

  private keyName(pair: Pair<unknown, unknown>): string | undefined {
    const k = pair.key as Node | null;
    return k !== null && isScalar(k) && k.value !== null ? String(k.value) : undefined;
  }

  parse(): StackSpec | undefined {
    if (!this.parseText('a stack')) return undefined;
    const top = this.deref(this.doc.contents as Node | null, 1, 'top level');
    if (isNullish(top)) return this.fail(1, `the stack is empty; expected ${EXAMPLE}`);
    if (!isMap(top)) return this.fail(this.lineOf(top, 1), `the top level must be a mapping with a "services" key, found ${kindOf(top)}; expected ${EXAMPLE}`);
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
      this.add(
        line,
        `unknown top-level key ${shown}${name ? didYouMean(name, TOP_KEYS) : ''}; allowed keys are ${TOP_KEYS.map((k) => `"${k}"`).join(', ')} (and "x-…" ` +
          `for anchors)`,
      );
    }

    const layoutPair = pairs.get('layout');
    const bandsPair = pairs.get('bands');
    let layout: Layout | undefined;
    if (layoutPair && bandsPair) {
      this.add(
        this.lineOf(bandsPair.key as Node, 1),
        `give either "layout: FILE" or inline "bands:", not both (layout is at line ${this.lineOf(layoutPair.key as Node, 1)})`,
      );
    } else if (layoutPair) layout = readLayoutKey(layoutPair, this.reader);
    else if (bandsPair) layout = readBandsKey(bandsPair, top.items, this.reader);
    // A broken layout (reported): the services' bands are not looked up in it.
    const layoutSeen = { layout, broken: (layoutPair !== undefined || bandsPair !== undefined) && layout === undefined };

    const servicesPair = pairs.get('services');
    if (!servicesPair) return this.fail(this.lineOf(top, 1), `no "services" key at the top level; expected ${EXAMPLE}`);
    const sLine = this.lineOf(servicesPair.key as Node, 1);
    const sNode = this.deref(servicesPair.value as Node | null, sLine, '"services"');
    if (isNullish(sNode)) return this.fail(sLine, `"services" is empty; define at least one service, e.g. ${EXAMPLE}`);
    if (!isMap(sNode)) {
      const found = `found ${kindOf(sNode)}; expected ${EXAMPLE}`;
      return this.fail(this.lineOf(sNode, sLine), `"services" must be a mapping of service names to their settings, ${found}`);
    }
    if (sNode.items.length === 0) return this.fail(this.lineOf(sNode, sLine), `"services" is empty; define at least one service, e.g. ${EXAMPLE}`);
    const drafts: Draft[] = [];
    const seen = new Map<string, number>();
    for (const pair of sNode.items) {
      const d = readService(pair, sLine, seen, layoutSeen, this.reader);
      if (d) drafts.push(d);
    }
    checkStack(drafts, layout, (line, text) => this.add(line, text));
    const spec: StackSpec = { file: this.file, dir: this.baseDir, services: drafts.map((d) => d.spec) };
    if (layout) spec.layout = layout;
    const strictPair = pairs.get('strict');
    if (strictPair) {
      const v = strictPair.value as Node | null;
      if (!v || !isScalar(v) || typeof v.value !== 'boolean')
        this.add(
          this.lineOf(strictPair.key as Node, 1),
          `strict must be true (a foreign listener on a replica's ports after ready fails it, 70) or false, found ${kindOf(v)}`,
        );
      else {
        spec.strict = v.value;
        for (const s of spec.services) s.strict ??= v.value;
      }
    }
    return spec;
  }
}

/**
 * Parses and validates a stack; relative paths (layout, cwd) are resolved against `baseDir`.
 * Throws one BerthError(DATAERR) listing every problem (details.errors holds the same lines).
 */
export function parseStack(text: string, file: string, baseDir: string): StackSpec {
  const p = new StackParser(text, file, resolve(baseDir));
  const spec = p.parse();
  if (p.problems.length > 0 || !spec) throw p.error();
  checkNulBytes(spec);
  return spec;
}

/**
 * Strings that become a program's argv or environment must hold no NUL byte ("\0" in a YAML
 * double-quoted string): refused at load time (65), not at spawn as a crash of the replica.
 */
function checkNulBytes(spec: StackSpec): void {
  const errors: string[] = [];
  for (const s of spec.services) {
    const at = `services.${s.name}`;
    const fields: [string, string | undefined][] = [
      ...s.command.map((w, i): [string, string] => [`${at}.command word ${i + 1}`, w]),
      ...Object.entries(s.env).flatMap(([k, v]): [string, string][] => [
        [`${at}.env name ${JSON.stringify(k.replace(/\0/g, '\\0'))}`, k],
        [`${at}.env.${k.replace(/\0/g, '\\0')}`, v],
      ]),
      [`${at}.cwd`, s.cwd],
      [`${at}.host`, s.host],
      [`${at}.ready`, s.ready?.kind === 'cmd' ? s.ready.command : s.ready?.kind === 'http' ? s.ready.url : undefined],
    ];
    for (const p of nulProblems(fields)) errors.push(`${spec.file}:${s.line}: ${p}`);
  }
  if (errors.length > 0) throw new BerthError(EXIT.DATAERR, errors.join('\n'), { file: spec.file, errors });
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
  checkDirOwners(spec);
  return spec;
}

/** Each `dir_owner:` must name a user (and group) the host knows: 65 at its line, before anything is leased. */
function checkDirOwners(spec: StackSpec): void {
  const errors: string[] = [];
  for (const s of spec.services) {
    if (s.dirOwner === undefined) continue;
    const ids = userIds(s.dirOwner);
    if ('problem' in ids) errors.push(`${spec.file}:${s.dirOwnerLine ?? s.line}: service ${JSON.stringify(s.name)}: dir_owner ${s.dirOwner}: ${ids.problem}`);
  }
  if (errors.length > 0) throw new BerthError(EXIT.DATAERR, errors.join('\n'), { file: spec.file, errors });
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
