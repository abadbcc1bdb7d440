import { isMap, isScalar } from 'yaml';
import type { Node, Pair } from 'yaml';
import { MAX_BLOCK, portSetProblem, type PortEntry } from '../../allocate/port-set.js';
import { compilePattern, learnEntriesProblem } from '../../launch/learn.js';
import { isNullish, kindOf, scalarText, toUint } from '../../util/yaml-values.js';

/*
 * A service's `ports:` key: its named port set, in order, the first entry the primary port.
 *   ports:
 *     http: 1                  # one port
 *     dist: { block: 32 }      # 32 contiguous ports, exclusively this replica's
 *     workers: { block: window }  # the rest of the replica's band window, as one block
 *     master: shared           # one port for all replicas (ranks), bound by replica 0
 *     dist: { block: 8, shared: true }   # a block for all replicas
 *     store: { shared: true, generations: keep }   # kept across a job's generations
 *     api: learn               # a port the service chooses itself (binds port 0), learned
 *     admin: { learn: 'admin on port (\d+)' }     # told apart from other learned ports by a line
 *     turn: { udp: true }      # one port whose UDP side the service uses too (held as well)
 * Reads the YAML into PortEntry[] and reports what can be told from the set alone; checks
 * against the service's source (window sizes, bands) are in stack-checks.ts.
 */

export interface YamlReader {
  deref(node: Node | null | undefined, line: number, what: string): Node | null | undefined;
  lineOf(node: Node | null | undefined, fallback: number): number;
  add(line: number, text: string): void;
  keyName(pair: Pair<unknown, unknown>): string | undefined;
}

const EXAMPLE = 'ports: { http: 1, dist: { block: 32 } }';

/** The entries, or undefined when the key is broken (every problem reported). */
export function readPortsKey(v: Node | null | undefined, line: number, label: string, y: YamlReader): PortEntry[] | undefined {
  if (isNullish(v) || !v || !isMap(v) || v.items.length === 0) {
    y.add(
      y.lineOf(v, line),
      `${label}: ports must be a mapping of port names to 1 or { block: N } or { block: window }, e.g. ` +
        `${EXAMPLE}, found ${v && isMap(v) ? 'an empty mapping' : kindOf(v)}`,
    );
    return undefined;
  }
  const entries: PortEntry[] = [];
  let broken = false;
  for (const p of v.items) {
    const at = y.lineOf(p.key as Node, line);
    const name = y.keyName(p);
    if (name === undefined) {
      y.add(at, `${label}: port names must be plain text, found ${kindOf(p.key as Node)}`);
      broken = true;
      continue;
    }
    const e = entry(name, y.deref(p.value as Node | null, at, label), at, label, y);
    if (e) entries.push(e);
    else broken = true;
  }
  if (broken) return undefined;
  const problem = portSetProblem(entries);
  if (problem !== undefined) {
    y.add(line, `${label}: ports: ${problem}`);
    return undefined;
  }
  // Shared entries are the service's, not the replica's: the primary port is the first of the rest.
  const first = entries.find((e) => e.kind !== 'shared');
  const learnProblem = learnEntriesProblem(
    entries.flatMap((e) => (e.kind === 'learn' ? [{ name: e.name, ...(e.pattern !== undefined ? { pattern: e.pattern } : {}) }] : [])),
  );
  if (learnProblem !== undefined) {
    y.add(line, `${label}: ports: ${learnProblem}`);
    return undefined;
  }
  if (first && first.kind !== 'single' && first.kind !== 'learn') {
    y.add(
      line,
      `${label}: ports: the first entry is the primary port ({port}, readiness, URLs) and must be one port, but "${first.name}" is a block; put a single ` +
        `port first, e.g. ${EXAMPLE}`,
    );
    return undefined;
  }
  return entries;
}

function entry(name: string, v: Node | null | undefined, at: number, label: string, y: YamlReader): PortEntry | undefined {
  const what = `${label}: port "${name}"`;
  const text = scalarText(v);
  if (text !== undefined || (v && isScalar(v))) {
    if (text?.trim() === '1') return { name, kind: 'single' };
    if (text?.trim() === 'shared') return { name, kind: 'shared', count: 1 };
    if (text?.trim() === 'learn') return { name, kind: 'learn' };
    y.add(
      y.lineOf(v, at),
      `${what} must be 1 (one port), shared (one port for every replica), learn (one the service chooses), { block: N } or { block: window }, found ` +
        `${kindOf(v)}`,
    );
    return undefined;
  }
  // { learn: 'REGEX' }: learned, told apart by the port a line of the service's output gives.
  const learnKey = v && isMap(v) ? v.items.find((p) => y.keyName(p) === 'learn') : undefined;
  if (learnKey) {
    const lv = y.deref(learnKey.value as Node | null, at, label);
    const pattern = scalarText(lv);
    if (v && isMap(v) && v.items.length > 1) {
      y.add(y.lineOf(v, at), `${what}: { learn: REGEX } takes nothing else (a learned port is the service's own, neither a block nor shared)`);
      return undefined;
    }
    if (pattern === undefined || pattern === '') {
      y.add(
        y.lineOf(lv, at),
        `${what}: learn must be a regular expression with one group for the port, e.g. { learn: 'listening on port (\\d+)' }, found ${kindOf(lv)}`,
      );
      return undefined;
    }
    const re = compilePattern(pattern);
    if (typeof re === 'string') {
      y.add(y.lineOf(lv, at), `${what}: learn ${JSON.stringify(pattern)} ${re}`);
      return undefined;
    }
    return { name, kind: 'learn', pattern };
  }
  // { udp: true }: one port of the replica's own, used on UDP too (coturn's 3478).
  const udpKey = v && isMap(v) ? v.items.find((p) => y.keyName(p) === 'udp') : undefined;
  if (udpKey) {
    const uv = y.deref(udpKey.value as Node | null, at, label);
    if (!uv || !isScalar(uv) || typeof uv.value !== 'boolean') {
      y.add(y.lineOf(uv, at), `${what}: udp must be true or false, found ${kindOf(uv)}`);
      return undefined;
    }
    const rest = (v as { items: Pair<unknown, unknown>[] }).items.filter((p) => p !== udpKey);
    if (rest.length > 0) {
      y.add(y.lineOf(uv, at), `${what}: udp is for one port of the replica's own ({ udp: true }), not with ${rest.map((p) => y.keyName(p) ?? '?').join(', ')}`);
      return undefined;
    }
    return uv.value ? { name, kind: 'single', udp: true } : { name, kind: 'single' };
  }
  // { block: N, shared: true }: a block for every replica, like `shared` is one port.
  const sharedKey = v && isMap(v) ? v.items.find((p) => y.keyName(p) === 'shared') : undefined;
  let shared = false;
  if (sharedKey) {
    const sv = y.deref(sharedKey.value as Node | null, at, label);
    if (!sv || !isScalar(sv) || typeof sv.value !== 'boolean') {
      y.add(y.lineOf(sv, at), `${what}: shared must be true or false, found ${kindOf(sv)}`);
      return undefined;
    }
    shared = sv.value;
  }
  // generations: fresh | keep: whether a job's next generation gets a new shared port.
  const genKey = v && isMap(v) ? v.items.find((p) => y.keyName(p) === 'generations') : undefined;
  let keep = false;
  if (genKey) {
    const gv = y.deref(genKey.value as Node | null, at, label);
    const gt = scalarText(gv)?.trim();
    if (gt !== 'keep' && gt !== 'fresh') {
      y.add(
        y.lineOf(gv, at),
        `${what}: generations must be fresh (a new port for each generation of the job's ranks, the default) or keep, found ${kindOf(gv)}`,
      );
      return undefined;
    }
    if (!shared) {
      y.add(y.lineOf(gv, at), `${what}: generations is for a shared port (every rank's); add shared: true, or remove generations`);
      return undefined;
    }
    keep = gt === 'keep';
  }
  const items = v && isMap(v) ? v.items.filter((p) => p !== sharedKey && p !== genKey) : [];
  // { shared: true } alone: one port, as `shared` is (room for generations: keep).
  if (shared && items.length === 0) return { name, kind: 'shared', count: 1, ...(keep ? { keep: true as const } : {}) };
  if (!v || !isMap(v) || items.length !== 1 || y.keyName(items[0]!) !== 'block') {
    y.add(
      y.lineOf(v, at),
      `${what} must be 1 (one port), shared (one port for every replica), learn (one the service chooses), { block: N } or { block: window }, found ` +
        `${v && isMap(v) ? 'another mapping' : kindOf(v)}`,
    );
    return undefined;
  }
  const bv = y.deref(items[0]!.value as Node | null, at, label);
  const bt = scalarText(bv)?.trim();
  if (bt === 'window') {
    if (!shared) return { name, kind: 'window' };
    y.add(y.lineOf(bv, at), `${what}: a shared block has a size ({ block: N, shared: true }); the window is each replica's own`);
    return undefined;
  }
  const n = bt === undefined ? undefined : toUint(bt);
  if (n === undefined || n < 1 || n > MAX_BLOCK) {
    y.add(y.lineOf(bv, at), `${what}: block must be a number of ports 1-${MAX_BLOCK} or "window" (the replica's band window), found ${kindOf(bv)}`);
    return undefined;
  }
  return shared ? { name, kind: 'shared', count: n, ...(keep ? { keep: true as const } : {}) } : { name, kind: 'block', count: n };
}

/** Ports a replica's set needs at least (a window entry needs one, it takes the rest of the window). */
export function portsNeeded(entries: readonly PortEntry[]): number {
  return entries.reduce((n, e) => n + (e.kind === 'block' || e.kind === 'shared' ? e.count : e.kind === 'learn' ? 0 : 1), 0);
}
