/*
 * Learned ports (the service binds port 0, or picks its own), pure: which listener is which
 * learned entry. A port is learned only when the replica's own tree listens on it and its
 * pattern, when it has one, matched it: a log line alone is never trusted, nor a listener no
 * pattern claims when there are several entries (each then needs one: learnEntriesProblem).
 */

/** A learned entry: its name in the set, and a regular expression with one group over output lines. */
export interface LearnEntry {
  name: string;
  /** Source of a RegExp whose first group is the port (e.g. 'Uvicorn running on http://[^:]+:(\d+)'). */
  pattern?: string;
}

/** A TCP listener of the tree (tree-listeners.ts). */
export interface LearnListener {
  port: number;
  address: string;
  pid?: number;
}

export type LearnState =
  | { state: 'learned'; ports: Map<string, number> }
  /** Still waiting: what for, in words (the deadline's message says it). */
  | { state: 'waiting'; why: string; ambiguous?: number[] };

/** Most lines that matched kept per entry (the deadline's diagnosis lists them). */
export const MAX_MATCHES = 20;

/** The compiled pattern, or a message saying what is wrong with it. */
export function compilePattern(text: string): RegExp | string {
  let re: RegExp;
  try {
    re = new RegExp(text);
  } catch (e) {
    return `is not a regular expression: ${(e as Error).message}`;
  }
  // One group, the port: count the groups a match has (an empty match of the pattern tells).
  const groups = new RegExp(`${text}|`).exec('')!.length - 1;
  if (groups < 1) return 'has no group: put the port in parentheses, e.g. \'listening on port (\\d+)\'';
  return re;
}

/** The problem with a launch's learned entries, or undefined. Several entries each need a pattern. */
export function learnEntriesProblem(entries: readonly LearnEntry[]): string | undefined {
  for (const e of entries) {
    if (e.pattern === undefined) continue;
    const re = compilePattern(e.pattern);
    if (typeof re === 'string') return `the learn pattern of "${e.name}" ${JSON.stringify(e.pattern)} ${re}`;
  }
  const bare = entries.filter((e) => e.pattern === undefined);
  if (entries.length > 1 && bare.length > 0) {
    return `${entries.length} ports are learned (${entries.map((e) => e.name).join(', ')}), so each needs a pattern telling its listener from the others', ` +
      `and ${bare.map((e) => `"${e.name}"`).join(', ')} has none: write NAME: { learn: 'REGEX' } with one group for the port`;
  }
  return undefined;
}

/** The port a line gives for `re` (its first group), or undefined. */
export function portOfLine(re: RegExp, line: string): number | undefined {
  const m = re.exec(line);
  const text = m?.[1];
  if (text === undefined || !/^\d{1,5}$/.test(text)) return undefined;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : undefined;
}

/**
 * Which listener is which entry. `known`: the ports that are not learned (the set's leased
 * ones, shared ports): never a learned one. `matched`: per entry with a pattern, the ports its
 * lines gave, oldest first (the newest that the tree listens on wins: a restart of a worker
 * inside the tree prints again).
 */
export function learnFrom(
  entries: readonly LearnEntry[],
  listeners: readonly LearnListener[],
  known: ReadonlySet<number>,
  matched: ReadonlyMap<string, readonly number[]>,
): LearnState {
  const listened = [...new Set(listeners.map((l) => l.port).filter((p) => !known.has(p)))].sort((a, b) => a - b);
  const ports = new Map<string, number>();
  const missing: string[] = [];
  for (const e of entries) {
    if (e.pattern === undefined) {
      if (listened.length === 1) ports.set(e.name, listened[0]!);
      else if (listened.length === 0) missing.push(`"${e.name}": its tree listens on no port yet`);
      else
        return {
          state: 'waiting',
          why: `"${e.name}": its tree listens on ${listened.length} ports (${listened.join(', ')}), and without a pattern berth cannot tell which is ` +
            `"${e.name}": write ${e.name}: { learn: 'REGEX' } (or --learn REGEX) with one group for the port, over the line the program prints`,
          ambiguous: listened,
        };
      continue;
    }
    const seen = matched.get(e.name) ?? [];
    const port = [...seen].reverse().find((p) => listened.includes(p) && ![...ports.values()].includes(p));
    if (port !== undefined) ports.set(e.name, port);
    else if (seen.length === 0) missing.push(`"${e.name}": no line matched ${JSON.stringify(e.pattern)}`);
    else
      missing.push(
        `"${e.name}": lines gave ${[...new Set(seen)].join(', ')}, but its tree does not listen there${listened.length > 0 ? ` (it listens on ` +
          `${listened.join(', ')})` : ''}`,
      );
  }
  return missing.length === 0 ? { state: 'learned', ports } : { state: 'waiting', why: missing.join('; ') };
}

/** Splits a stream into lines for the patterns; a line longer than this is cut (its start is where a port is printed). */
const MAX_LINE = 4096;

export class LineSplitter {
  private rest = '';
  constructor(private readonly onLine: (line: string) => void) {}

  push(chunk: Buffer): void {
    const text = this.rest + chunk.toString('utf8');
    const lines = text.split('\n');
    this.rest = lines.pop()!.slice(0, MAX_LINE);
    for (const l of lines) this.onLine(l.replace(/\r$/, '').slice(0, MAX_LINE));
  }
}
