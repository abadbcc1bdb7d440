/**
 * How long berth takes to check a config template before anything starts, by number of
 * tags (issue 32 §14): the check finds every tag's line once per template (util/line-index.ts);
 * it used to scan from the start for each tag, so 40,000 tags took over a minute. Times the
 * load-time work on one template: templateProblems (syntax, unknown tags, every tag's line)
 * and templateTagNames (the dependency check's tags), in this process.
 */
import { templateProblems, templateTagNames } from '../src/stack/file/templates.js';
import { table, type Section } from './lib/markdown.js';
import { fmt, median, nowMs } from './lib/stats.js';

const SIZES = [4_000, 16_000, 40_000];
const RUNS = 5;

function template(tags: number): string {
  return Array.from({ length: tags }, (_, i) => `key${i} = {{port}}`).join('\n') + '\n';
}

export async function benchTemplateCheck(): Promise<Section> {
  const rows: string[][] = [];
  let largest = NaN;
  for (const n of SIZES) {
    const text = template(n);
    const times: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const t0 = nowMs();
      const problems = templateProblems(text, { port: 20000 }, 'bench.conf');
      const tags = templateTagNames(text);
      times.push(nowMs() - t0);
      if (problems.length > 0 || tags.length !== n) throw new Error(`template of ${n} tags: ${problems[0] ?? `${tags.length} tags found`}`);
    }
    largest = median(times);
    rows.push([n.toLocaleString('en-US'), `${fmt(Buffer.byteLength(text) / 1024, 0)} KiB`, `${fmt(median(times), 1)} ms`]);
  }
  const body = [
    table(['`{{port}}` tags', 'template size', 'median check time'], rows),
    '',
    `Median of ${RUNS} checks of one template each, measured by bench/template-check.ts (templateProblems and templateTagNames, the work \`berth up\` does per template before anything starts). Linear in the tags: before issue 32 §14 each tag's line was found by scanning from the start of the text (4,000 tags took 6.8 s, 40,000 over a minute).`,
  ].join('\n');
  return {
    title: '17. Template checking by number of tags',
    body,
    summary: [{ what: 'checking a 40,000-tag template', measured: `${fmt(largest, 0)} ms`, target: '—', verdict: 'reported' }],
  };
}
