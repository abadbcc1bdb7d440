/** Markdown rendering for docs/benchmarks.md. */

/** A pipe table; the first column is left-aligned, the others right-aligned unless `leftAll`. */
export function table(header: readonly string[], rows: readonly (readonly string[])[], leftAll = false): string {
  const esc = (c: string) => c.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const line = (cells: readonly string[]) => `| ${cells.map(esc).join(' | ')} |`;
  const align = header.map((_, i) => (i === 0 || leftAll ? '---' : '---:'));
  return [line(header), `| ${align.join(' | ')} |`, ...rows.map(line)].join('\n');
}

/** A benchmark's contribution to the report. */
export interface Section {
  title: string;
  /** Markdown body (tables and notes), without the heading. */
  body: string;
  /** One line for the summary table at the top: what, measured, target, verdict. */
  summary?: { what: string; measured: string; target: string; verdict: string }[];
}
