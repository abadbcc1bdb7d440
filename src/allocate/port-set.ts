import { BerthError, EXIT } from '../errors.js';

/*
 * A port set: the named ports one service (one replica) owns, in declaration order. The
 * first entry is the primary port ({port}, readiness, ownership, URLs refer to it).
 *   single  one port, held by berth until the handoff (fd handoff passes it as an fd); with
 *           `udp`, its UDP side too (a TURN or DNS server's port is both)
 *   block   N contiguous ports, leased for the replica's life and never held once leased:
 *           the program binds inside it itself (vLLM's VLLM_PORT scan, Ray's worker range)
 *   window  a block of the replica's whole band window (stacks and --instance only)
 *   shared  one port (or block) for every replica (rank) of a stack service, bound by
 *           replica 0 (a torch.distributed MASTER_PORT): leased once on rank 0's host
 *   learn   a port the service chooses (binds port 0): learned once it listens, then leased
 * Pure: parsing, naming and the values placeholders and env vars take.
 */

export type PortEntry =
  /** `udp`: the service uses the port's UDP side too, which berth then holds as well until the handoff. */
  | { name: string; kind: 'single'; udp?: true }
  | { name: string; kind: 'block'; count: number }
  | { name: string; kind: 'window' }
  /** count > 1: a block. `keep`: a job's ranks keep it across their generations (`generations: keep`). */
  | { name: string; kind: 'shared'; count: number; keep?: true }
  /** A port the service chooses itself (`NAME: learn`): leased once launch/learn.ts has learned it. */
  | { name: string; kind: 'learn'; pattern?: string };

/** An entry once allocated: a single has one port, a block its ports in ascending order. */
export interface AssignedPorts {
  name: string;
  kind: 'single' | 'block';
  ports: number[];
}

/** What `{ports.NAME.FIELD}` may ask of an entry; no field is the first port. */
export type PortField = 'first' | 'last' | 'range' | 'count';
export const PORT_FIELDS: readonly PortField[] = ['first', 'last', 'range', 'count'];

/** Port names: like service names (no "." so `{ports.NAME.first}` is unambiguous). */
export const PORT_NAME_RE = /^[A-Za-z][A-Za-z0-9_-]*$/;

/** Longest port name (it is stored in the lease record every user reads: docs/leases.md). */
export const MAX_PORT_NAME = 64;

/** Largest block berth hands out (a band window rarely exceeds this; Ray's worker range is ~1000). */
export const MAX_BLOCK = 4096;

/** The entries that are leased before the service starts (all but the learned ones). */
export function leasedEntries(entries: readonly PortEntry[]): PortEntry[] {
  return entries.filter((e) => e.kind !== 'learn');
}

/** The set of a service that declares no `ports:`: one single port. */
export const IMPLICIT_SET: readonly PortEntry[] = [{ name: 'port', kind: 'single' }];

/** BERTH_PORT_<NAME>: upper case, "-" as "_". */
export function portEnvName(name: string): string {
  return `BERTH_PORT_${name.toUpperCase().replace(/-/g, '_')}`;
}

/** The first problem with a list of entries (names, duplicates, sizes), or undefined. */
export function portSetProblem(entries: readonly PortEntry[]): string | undefined {
  if (entries.length === 0) return 'declares no ports';
  const seen = new Map<string, string>();
  for (const e of entries) {
    if (e.name.length > MAX_PORT_NAME)
      return `port name "${e.name.slice(0, 20)}…" is ${e.name.length} characters long; a port name has at most ${MAX_PORT_NAME} (it is stored in the ` +
        `lease record)`;
    if (!PORT_NAME_RE.test(e.name)) return `port name "${e.name}" is not a name (letters, digits, "_" and "-", starting with a letter)`;
    const env = portEnvName(e.name);
    const other = seen.get(env);
    if (other !== undefined) return other === e.name ? `port name "${e.name}" appears twice` : `port names "${other}" and "${e.name}" are the same ` +
      `variable ${env}`;
    seen.set(env, e.name);
    if (e.kind === 'block' && (!Number.isInteger(e.count) || e.count < 1 || e.count > MAX_BLOCK)) {
      return `block "${e.name}" has ${e.count} ports; a block has 1 to ${MAX_BLOCK}`;
    }
  }
  return undefined;
}

/**
 * `--ports http,dist=block:32,workers=window`: NAME alone (or NAME=1) is a single port,
 * NAME=block:N a block of N, NAME=window the instance's whole window. Throws BerthError 64.
 */
export function parsePortsFlag(text: string): PortEntry[] {
  const entries: PortEntry[] = [];
  // The flag is quoted in messages: a huge one only in part.
  const shown = JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}…` : text);
  for (const raw of text.split(',')) {
    const item = raw.trim();
    const eq = item.indexOf('=');
    const name = eq < 0 ? item : item.slice(0, eq).trim();
    const what = eq < 0 ? '1' : item.slice(eq + 1).trim();
    const block = /^block:(\d+)$/.exec(what);
    if (what === '1') entries.push({ name, kind: 'single' });
    else if (what === 'window') entries.push({ name, kind: 'window' });
    else if (block) entries.push({ name, kind: 'block', count: Number(block[1]) });
    else throw new BerthError(EXIT.USAGE, `--ports ${shown}: "${item.length > 40 ? `${item.slice(0, 37)}…` : item}" is not NAME, NAME=block:N or ` +
      `NAME=window (e.g. --ports http,dist=block:32)`);
  }
  const problem = portSetProblem(entries);
  if (problem !== undefined) throw new BerthError(EXIT.USAGE, `--ports ${shown}: ${problem}`);
  return entries;
}

/** The value of `{ports.NAME}` / `{ports.NAME.FIELD}`. */
export function portValue(a: AssignedPorts, field?: PortField): string {
  const first = a.ports[0]!;
  const last = a.ports[a.ports.length - 1]!;
  switch (field) {
    case undefined:
    case 'first':
      return String(first);
    case 'last':
      return String(last);
    case 'range':
      return `${first}-${last}`;
    case 'count':
      return String(a.ports.length);
  }
}

/** BERTH_PORT_<NAME> (the first port) for every entry, and _FIRST/_LAST/_COUNT for blocks. */
export function portSetEnv(set: readonly AssignedPorts[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const a of set) {
    const v = portEnvName(a.name);
    env[v] = portValue(a);
    if (a.kind === 'block') {
      env[`${v}_FIRST`] = portValue(a, 'first');
      env[`${v}_LAST`] = portValue(a, 'last');
      env[`${v}_COUNT`] = portValue(a, 'count');
    }
  }
  return env;
}

/** The single ports in set order: fd handoff passes them as fds 3, 4, … (LISTEN_FDNAMES). */
export function singles(set: readonly AssignedPorts[]): AssignedPorts[] {
  return set.filter((a) => a.kind === 'single');
}

/** "8000-8031" for a block, "8000" for a single: for messages and plain output. */
export function describeAssigned(a: AssignedPorts): string {
  return a.kind === 'block' ? portValue(a, 'range') : portValue(a);
}
