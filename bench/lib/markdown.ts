/** Markdown rendering for docs/benchmarks.md. */

/** A pipe table; the first column is left-aligned, the others right-aligned unless `leftAll`. */
export function table(header: readonly string[], rows: readonly (readonly string[])[], leftAll = false): string {
  const esc = (c: string) => c.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const line = (cells: readonly string[]) => `| ${cells.map(esc).join(' | ')} |`;
  const align = header.map((_, i) => (i === 0 || leftAll ? '---' : '---:'));
  return [line(header), `| ${align.join(' | ')} |`, ...rows.map(line)].join('\n');
}

/** The figures of issue 23's goals table, each filled by the section that measures it. */
export const GOALS = [
  ['stack-busy', '16-replica stack ready, 50,000 sockets + 2,000 processes / idle', '≤ 1.2×'],
  ['stack-busy-cpu', 'berth CPU for that stack, loaded / idle', '≤ 1.5×'],
  ['port-busy', '`berth port` with 50,000 sockets / idle host (a series each)', '≤ 1.3×'],
  ['read', 'one filtered read of 100 ports at 50,000 sockets / same read at 500 sockets', '≤ 2×'],
  ['port-bin', '`berth port`, single executable / `node -e 0` (paired)', '≤ 1.15×'],
  ['port-cjs', '`berth port`, `node dist/berth.cjs` / `node -e 0` (paired)', '≤ 1.2×'],
  ['stack-256', '256-replica stack ready / spawn-and-poll floor', '≤ 1.15×'],
] as const;
export type GoalKey = (typeof GOALS)[number][0];

/** A benchmark's contribution to the report. */
export interface Section {
  title: string;
  /** Markdown body (tables and notes), without the heading. */
  body: string;
  /** One line for the summary table at the top: what, measured, target, verdict. */
  summary?: { what: string; measured: string; target: string; verdict: string; goal?: GoalKey }[];
}
