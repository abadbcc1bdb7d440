/*
 * Renders what `berth doctor --layout X` finds for the example layouts on two host shapes,
 * as Markdown, into the marked sections of README.md. test/layout-examples.test.ts fails
 * when README.md is out of date; regenerate with
 *
 *   node --import tsx examples/layouts/render-doctor.ts --write
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HostSysctls } from '../../src/host/host-map.js';
import { checkLayout, parseLayout, summarizeFindings } from '../../src/layout/index.js';
import type { Finding } from '../../src/layout/index.js';
import { wellKnownFindings } from '../../src/layout/check-well-known.js';

export const HERE = dirname(fileURLToPath(import.meta.url));
export const README = join(HERE, 'README.md');

export const HOSTS: Record<string, { title: string; host: HostSysctls }> = {
  'ephemeral-9000': {
    title: 'ephemeral range 9000-65499, nothing reserved',
    host: { ephemeral: { lo: 9000, hi: 65499 }, reserved: [], unprivilegedStart: 1024 },
  },
  'linux-default': {
    title: 'Linux defaults: ephemeral range 32768-60999, nothing reserved',
    host: { ephemeral: { lo: 32768, hi: 60999 }, reserved: [], unprivilegedStart: 1024 },
  },
};
export const LAYOUTS = ['rl-framework.yaml', 'gpu-fixed-10000.yaml', 'nemo-rl.yaml'];

function renderFinding(f: Finding): string {
  const lines = [`- **${f.severity}** \`${f.code}\`: ${f.message}`];
  for (const fix of f.fixes ?? []) {
    if (fix.kind === 'sysctl') lines.push(`  - fix: \`${fix.command}\` — ${fix.description}`);
    else lines.push(`  - fix: band \`${fix.band}\` → \`${fix.range.lo}-${fix.range.hi}\` — ${fix.description}`);
  }
  return lines.join('\n');
}

export function renderSection(layoutFile: string, hostKey: string): string {
  const layout = parseLayout(readFileSync(join(HERE, layoutFile), 'utf8'), basename(layoutFile));
  // What `berth doctor --layout` prints: the layout check, then the notes on service ports.
  const findings = [...checkLayout(layout, HOSTS[hostKey]!.host), ...wellKnownFindings(layout)];
  const s = summarizeFindings(findings);
  const exit = s.errors > 0 ? 1 : 0;
  const n = (k: number, word: string) => `${k} ${word}${k === 1 ? '' : 's'}`;
  const head = `${n(s.errors, 'error')}, ${n(s.warnings, 'warning')}, ${n(s.infos, 'info')} (exit ${exit}):`;
  return [head, '', ...findings.map(renderFinding)].join('\n');
}

const marker = (layoutFile: string, hostKey: string) => `<!-- doctor ${layoutFile} ${hostKey} -->`;
const END = '<!-- /doctor -->';

/** README.md with every marked section replaced by freshly rendered findings. */
export function renderReadme(current: string): string {
  let out = current;
  for (const l of LAYOUTS) {
    for (const h of Object.keys(HOSTS)) {
      const start = marker(l, h);
      const i = out.indexOf(start);
      if (i < 0) throw new Error(`README.md lacks the section marker ${start}`);
      const j = out.indexOf(END, i);
      if (j < 0) throw new Error(`README.md: section ${start} has no ${END}`);
      out = `${out.slice(0, i + start.length)}\n${renderSection(l, h)}\n${out.slice(j)}`;
    }
  }
  return out;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const next = renderReadme(readFileSync(README, 'utf8'));
  if (process.argv.includes('--write')) writeFileSync(README, next);
  else process.stdout.write(next);
}
