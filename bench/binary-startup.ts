/**
 * Benchmark 7: the single executable (scripts/build-bin.mjs). Start-up of `berth --version`
 * and `berth port` from the binary, built with each of its start-up modes, against
 * `node dist/berth.cjs` and `node -e 0`; and the binary's size.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchContext } from './lib/context.js';
import { table, type Section } from './lib/markdown.js';
import { fmt, median, percentile, verdict } from './lib/stats.js';
import { timeSpawn } from './port-cli.js';

const RANGE = '25000-25999';
const TARGET = 1.15;
const MODES = ['snapshot', 'code-cache', 'plain'] as const;
type Mode = (typeof MODES)[number];

/** The mode build-bin.mjs uses when given none (the shipped binary's). */
function defaultMode(root: string): Mode {
  const m = /const DEFAULT_MODE = '([a-z-]+)'/.exec(readFileSync(join(root, 'scripts', 'build-bin.mjs'), 'utf8'));
  return (m?.[1] ?? 'snapshot') as Mode;
}

export async function benchBinary(ctx: BenchContext): Promise<Section> {
  const title = '7. Single executable start-up and size';
  const cli = join(ctx.repoRoot, 'dist', 'berth.cjs');
  if (!existsSync(cli)) throw new Error('dist/berth.cjs is missing (run node scripts/build.mjs)');
  const shipped = defaultMode(ctx.repoRoot);
  const bins = {} as Record<Mode, { path: string; bytes: number; buildS: number }>;
  for (const mode of MODES) {
    const path = join(ctx.tmp, `berth-${mode}`);
    const t0 = Date.now();
    ctx.log(`single executable: building the ${mode} binary`);
    execFileSync(process.execPath, ['scripts/build-bin.mjs', '--mode', mode, '--out', path], { cwd: ctx.repoRoot, stdio: ['ignore', 'ignore', 'pipe'] });
    bins[mode] = { path, bytes: statSync(path).size, buildS: (Date.now() - t0) / 1000 };
  }
  const env = { ...process.env, BERTH_STATE_DIR: ctx.privateDir('binary-state') };
  const port = ['port', '--range', RANGE, '--ttl', '1m'];
  const cmds: { key: string; label: string; argv: string[]; kind: 'version' | 'port' | 'floor' }[] = [
    { key: 'node', label: '`node -e 0`', argv: [process.execPath, '-e', '0'], kind: 'floor' },
    { key: 'cjs-v', label: '`node dist/berth.cjs --version`', argv: [process.execPath, cli, '--version'], kind: 'version' },
    ...MODES.map((m) => ({ key: `${m}-v`, label: `binary (${m}) \`--version\``, argv: [bins[m].path, '--version'], kind: 'version' as const })),
    { key: 'cjs-p', label: `\`node dist/berth.cjs port --range ${RANGE} --ttl 1m\``, argv: [process.execPath, cli, ...port], kind: 'port' },
    ...MODES.map((m) => ({ key: `${m}-p`, label: `binary (${m}) \`port --range ${RANGE} --ttl 1m\``, argv: [bins[m].path, ...port], kind: 'port' as const })),
  ];
  const n = ctx.quick ? 8 : 21;
  const warm = 3;
  ctx.log(`single executable: ${warm} warm-up + ${n} timed rounds of ${cmds.length} commands`);
  const times = new Map<string, number[]>(cmds.map((c) => [c.key, []]));
  for (let i = 0; i < warm + n; i++) {
    // Interleaved, so every command sees the same page cache and background load.
    for (const c of cmds) {
      const r = await timeSpawn(c.argv, env);
      if (r.code !== 0) throw new Error(`${c.argv.join(' ')} exited ${r.code}: ${r.stderr.trim().slice(0, 400)}`);
      if (i >= warm) times.get(c.key)!.push(r.ms);
    }
  }
  const med = (k: string) => median(times.get(k)!);
  const floor = med('node');
  const rows = cmds.map((c) => [
    c.label,
    fmt(med(c.key), 1),
    fmt(percentile(times.get(c.key)!, 90), 1),
    `${fmt(med(c.key) / floor, 2)}×`,
    c.key === `${shipped}-p` ? `≤ ${TARGET}×: ${verdict(med(c.key) / floor <= TARGET)}` : '',
  ]);
  const sizes = MODES.map((m) => [`${m}${m === shipped ? ' (shipped)' : ''}`, `${fmt(bins[m].bytes / 2 ** 20, 1)} MiB`, `${fmt((bins[m].bytes - statSync(process.execPath).size) / 2 ** 20, 2)} MiB`, `${fmt(bins[m].buildS, 1)} s`]);
  const r = med(`${shipped}-p`) / floor;
  const body = [
    table(['command', 'median ms', 'p90 ms', 'vs node -e 0', 'target'], rows),
    '',
    table(['binary start-up mode', 'size', 'over node itself', 'build time'], sizes),
    '',
    `Wall time from spawn() to exit; median of ${n} rounds after ${warm} warm-up rounds, every command once per round in the order of the table. ` +
      `Each binary is scripts/build-bin.mjs's output for that mode, built from the same sources by this run with node ${process.version} (${fmt(statSync(process.execPath).size / 2 ** 20, 1)} MiB): ` +
      '`snapshot` stores a V8 start-up snapshot taken after every command\'s code was evaluated (src/cli/sea-snapshot.ts); `code-cache` stores V8\'s compiled code for the bundle; `plain` stores the bundle\'s source alone. ' +
      `\`berth port\` leases a new port each call in a fresh private BERTH_STATE_DIR, in the host's network namespace. The shipped mode is \`${shipped}\` (build-bin.mjs's default).`,
  ].join('\n');
  return {
    title,
    body,
    summary: [
      { what: `single executable (${shipped}) \`berth port\` / \`node -e 0\``, measured: `${fmt(r, 2)}× (${fmt(med(`${shipped}-p`), 1)} vs ${fmt(floor, 1)} ms)`, target: `≤ ${TARGET}×`, verdict: verdict(r <= TARGET) },
      { what: 'single executable size', measured: `${fmt(bins[shipped].bytes / 2 ** 20, 1)} MiB`, target: '—', verdict: 'reported' },
    ],
  };
}
