/** Markdown rendering for docs/benchmarks.md. */

/** A pipe table; the first column is left-aligned, the others right-aligned unless `leftAll`. */
export function table(header: readonly string[], rows: readonly (readonly string[])[], leftAll = false): string {
  const esc = (c: string) => c.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const line = (cells: readonly string[]) => `| ${cells.map(esc).join(' | ')} |`;
  const align = header.map((_, i) => (i === 0 || leftAll ? '---' : '---:'));
  return [line(header), `| ${align.join(' | ')} |`, ...rows.map(line)].join('\n');
}

/**
 * The goals tables at the top of docs/benchmarks.md, each figure filled by the section that
 * measures it (its summary line's `goal`), so one full `npm run bench` settles all of them:
 * issue 31's (start-up at the runtime's floor, CPU per replica), then issue 23's busy-node
 * figures, which issue 31 must not lose.
 */
export const GOALS = [
  ['port-cjs', 31, '`node dist/berth.cjs port --range … --ttl 2s` / `node -e 0` (paired)', '≤ 1.15×'],
  ['port-bin', 31, 'single executable `berth port` / `node -e 0` (paired)', '≤ 1.10×'],
  ['version-cjs', 31, '`node dist/berth.cjs --version` / `node -e 0` (paired)', '≤ 1.05×'],
  ['cpu-256', 31, "berth's CPU per replica, 256-replica stack (berth + its watchdog)", '≤ 10 ms'],
  ['sets-256', 31, "a stack's 256 ports + a 16-port block, one reserveSet() pass (section 15; section 11's 256 whole sets are 4,352 ports)", '≤ 100 ms'],
  ['stack-busy', 23, '16-replica stack ready, 50,000 sockets + 2,000 processes / idle', '≤ 1.2×'],
  ['stack-busy-cpu', 23, 'berth CPU for that stack, loaded / idle', '≤ 1.5×'],
  ['port-busy', 23, '`berth port` with 50,000 sockets / idle host (a series each)', '≤ 1.3×'],
  ['read', 23, 'one filtered read of 100 ports at 50,000 sockets / same read at 500 sockets', '≤ 2×'],
  ['stack-256', 23, '256-replica stack ready / spawn-and-poll floor', '≤ 1.15×'],
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
