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
  /** add(), then undefined: `return y.fail(…)` where a reader gives up. */
  fail(line: number, text: string): undefined;
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
  const learnProblem = learnEntriesProblem(entries.filter((e) => e.kind === 'learn'));
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
  const fail = (node: Node | null | undefined, text: string) => y.fail(y.lineOf(node, at), text);
  const sub = (key: string) => (v && isMap(v) ? v.items.find((p) => y.keyName(p) === key) : undefined);
  const valueOf = (p: Pair<unknown, unknown>) => y.deref(p.value as Node | null, at, label);
  const oneOf = `${what} must be 1 (one port), shared (one port for every replica), learn (one the service chooses), { block: N } or { block: window }, found `;
  const text = scalarText(v);
  if (text !== undefined || (v && isScalar(v))) {
    if (text?.trim() === '1') return { name, kind: 'single' };
    if (text?.trim() === 'shared') return { name, kind: 'shared', count: 1 };
    if (text?.trim() === 'learn') return { name, kind: 'learn' };
    return fail(v, oneOf + kindOf(v));
  }
  // { learn: 'REGEX' }: learned, told apart by the port a line of the service's output gives.
  const learnKey = sub('learn');
  if (learnKey) {
    const lv = valueOf(learnKey);
    const pattern = scalarText(lv);
    if (v && isMap(v) && v.items.length > 1) {
      return fail(v, `${what}: { learn: REGEX } takes nothing else (a learned port is the service's own, neither a block nor shared)`);
    }
    if (pattern === undefined || pattern === '') {
      const eg = `{ learn: 'listening on port (\\d+)' }`;
      return fail(lv, `${what}: learn must be a regular expression with one group for the port, e.g. ${eg}, found ${kindOf(lv)}`);
    }
    const re = compilePattern(pattern);
    if (typeof re === 'string') return fail(lv, `${what}: learn ${JSON.stringify(pattern)} ${re}`);
    return { name, kind: 'learn', pattern };
  }
  // { udp: true }: one port of the replica's own, used on UDP too (coturn's 3478).
  const udpKey = sub('udp');
  if (udpKey) {
    const uv = valueOf(udpKey);
    if (!uv || !isScalar(uv) || typeof uv.value !== 'boolean') return fail(uv, `${what}: udp must be true or false, found ${kindOf(uv)}`);
    const rest = (v as { items: Pair<unknown, unknown>[] }).items.filter((p) => p !== udpKey);
    if (rest.length > 0) {
      return fail(uv, `${what}: udp is for one port of the replica's own ({ udp: true }), not with ${rest.map((p) => y.keyName(p) ?? '?').join(', ')}`);
    }
    return uv.value ? { name, kind: 'single', udp: true } : { name, kind: 'single' };
  }
  // { block: N, shared: true }: a block for every replica, like `shared` is one port.
  const sharedKey = sub('shared');
  let shared = false;
  if (sharedKey) {
    const sv = valueOf(sharedKey);
    if (!sv || !isScalar(sv) || typeof sv.value !== 'boolean') return fail(sv, `${what}: shared must be true or false, found ${kindOf(sv)}`);
    shared = sv.value;
  }
  // generations: fresh | keep: whether a job's next generation gets a new shared port.
  const genKey = sub('generations');
  let keep = false;
  if (genKey) {
    const gv = valueOf(genKey);
    const gt = scalarText(gv)?.trim();
    if (gt !== 'keep' && gt !== 'fresh') {
      return fail(gv, `${what}: generations must be fresh (a new port for each generation of the job's ranks, the default) or keep, found ${kindOf(gv)}`);
    }
    if (!shared) return fail(gv, `${what}: generations is for a shared port (every rank's); add shared: true, or remove generations`);
    keep = gt === 'keep';
  }
  const items = v && isMap(v) ? v.items.filter((p) => p !== sharedKey && p !== genKey) : [];
  // { shared: true } alone: one port, as `shared` is (room for generations: keep).
  if (shared && items.length === 0) return { name, kind: 'shared', count: 1, ...(keep ? { keep: true as const } : {}) };
  if (!v || !isMap(v) || items.length !== 1 || y.keyName(items[0]!) !== 'block') return fail(v, oneOf + (v && isMap(v) ? 'another mapping' : kindOf(v)));
  const bv = valueOf(items[0]!);
  const bt = scalarText(bv)?.trim();
  if (bt === 'window') {
    if (!shared) return { name, kind: 'window' };
    return fail(bv, `${what}: a shared block has a size ({ block: N, shared: true }); the window is each replica's own`);
  }
  const n = bt === undefined ? undefined : toUint(bt);
  if (n === undefined || n < 1 || n > MAX_BLOCK) {
    return fail(bv, `${what}: block must be a number of ports 1-${MAX_BLOCK} or "window" (the replica's band window), found ${kindOf(bv)}`);
  }
  return shared ? { name, kind: 'shared', count: n, ...(keep ? { keep: true as const } : {}) } : { name, kind: 'block', count: n };
}

/** Ports a replica's set needs at least (a window entry needs one, it takes the rest of the window). */
export function portsNeeded(entries: readonly PortEntry[]): number {
  return entries.reduce((n, e) => n + (e.kind === 'block' || e.kind === 'shared' ? e.count : e.kind === 'learn' ? 0 : 1), 0);
}
