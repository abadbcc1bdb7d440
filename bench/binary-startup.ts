/**
 * Benchmark 7: the single executable (scripts/build-bin.mjs). Start-up of `berth --version`
 * and `berth port` from the binary, built with each of its start-up modes, against
 * `node dist/berth.cjs` and `node -e 0`; and the binary's size.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchContext } from './lib/context.js';
import { table, type Section } from './lib/markdown.js';
import { paired } from './lib/paired.js';
import { fmt, median, percentile, verdict } from './lib/stats.js';

const RANGE = '25000-25999';
/** Issue 31's goals, paired with `node -e 0`: the single executable's `berth port`, the npm bin's, and its `--version`. */
const TARGET = 1.1;
const CJS_TARGET = 1.15;
const VERSION_TARGET = 1.05;
const MODES = ['snapshot', 'code-cache', 'plain'] as const;
type Mode = (typeof MODES)[number];

/*
 * Each run is timed by a python helper around posix_spawn + wait4: the wall time, and the
 * child's own CPU time (user + sys) from wait4's rusage, exact to the microsecond. Under a
 * loaded machine wall times mostly measure the run queue; CPU time much less so.
 */
const TIMER = `import json, os, sys, time
argv = json.loads(sys.argv[1])
null = os.open('/dev/null', os.O_WRONLY)
t0 = time.perf_counter()
pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, null, 1)])
_, status, ru = os.wait4(pid, 0)
print(json.dumps([(time.perf_counter() - t0) * 1000, (ru.ru_utime + ru.ru_stime) * 1000, os.waitstatus_to_exitcode(status)]))`;

function timeRun(argv: string[], env: NodeJS.ProcessEnv): { wallMs: number; cpuMs: number } {
  const r = spawnSync('/usr/bin/python3', ['-c', TIMER, JSON.stringify(argv)], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`timer failed: ${r.stderr}`);
  const [wallMs, cpuMs, code] = JSON.parse(r.stdout) as [number, number, number];
  if (code !== 0) throw new Error(`${argv.join(' ')} exited ${code}: ${r.stderr.trim().slice(0, 400)}`);
  return { wallMs, cpuMs };
}

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
  // A short ttl: every call leases a new port, and they come back within the run.
  const port = ['port', '--range', RANGE, '--ttl', '2s'];
  const cmds: { key: string; label: string; argv: string[]; kind: 'version' | 'port' | 'floor' }[] = [
    { key: 'node', label: '`node -e 0`', argv: [process.execPath, '-e', '0'], kind: 'floor' },
    { key: 'cjs-v', label: '`node dist/berth.cjs --version`', argv: [process.execPath, cli, '--version'], kind: 'version' },
    ...MODES.map((m) => ({ key: `${m}-v`, label: `binary (${m}) \`--version\``, argv: [bins[m].path, '--version'], kind: 'version' as const })),
    { key: 'cjs-p', label: `\`node dist/berth.cjs port --range ${RANGE} --ttl 2s\``, argv: [process.execPath, cli, ...port], kind: 'port' },
    ...MODES.map((m) => ({ key: `${m}-p`, label: `binary (${m}) \`port --range ${RANGE} --ttl 2s\``, argv: [bins[m].path, ...port], kind: 'port' as const })),
  ];
  const n = ctx.quick ? 8 : 21;
  const warm = 3;
  ctx.log(`single executable: ${warm} warm-up + ${n} timed rounds of ${cmds.length} commands`);
  const wall = new Map<string, number[]>(cmds.map((c) => [c.key, []]));
  const cpu = new Map<string, number[]>(cmds.map((c) => [c.key, []]));
  for (let i = 0; i < warm + n; i++) {
    // Interleaved, so every command sees the same page cache and background load.
    for (const c of cmds) {
      const r = timeRun(c.argv, env);
      if (i < warm) continue;
      wall.get(c.key)!.push(r.wallMs);
      cpu.get(c.key)!.push(r.cpuMs);
    }
  }
  const med = (m: Map<string, number[]>, k: string) => median(m.get(k)!);
  const floor = { wall: med(wall, 'node'), cpu: med(cpu, 'node') };
  const ratio = (k: string) => ({ wall: med(wall, k) / floor.wall, cpu: med(cpu, k) / floor.cpu });
  const shippedPort = ratio(`${shipped}-p`);
  const rows = cmds.map((c) => [
    c.label,
    fmt(med(wall, c.key), 1),
    fmt(percentile(wall.get(c.key)!, 90), 1),
    `${fmt(ratio(c.key).wall, 2)}×`,
    fmt(med(cpu, c.key), 1),
    `${fmt(ratio(c.key).cpu, 2)}×`,
    c.key === `${shipped}-p` ? `≤ ${TARGET}×: ${verdict(shippedPort.wall <= TARGET)} (wall), ${verdict(shippedPort.cpu <= TARGET)} (CPU)` : '',
  ]);
  // The goals of issue 31, paired (bench/lib/paired.ts): A = `node -e 0`, B = `berth port` / `--version`.
  const pairs = ctx.quick ? 11 : 25;
  ctx.log(`single executable: ${pairs} pairs each of node -e 0 against berth port (binary, node dist/berth.cjs)`);
  const floorArgv = [process.execPath, '-e', '0'];
  const pBin = paired(floorArgv, [bins[shipped].path, ...port], pairs, env);
  const pCjs = paired(floorArgv, [process.execPath, cli, ...port], pairs, env);
  const pVer = paired(floorArgv, [process.execPath, cli, '--version'], pairs, env);
  const pairedRows = [
    [`binary (${shipped}) \`port --range ${RANGE} --ttl 2s\``, fmt(pBin.bWallMs, 1), fmt(pBin.aWallMs, 1), `${fmt(pBin.wallRatio, 3)}×`, `${fmt(pBin.cpuRatio, 3)}×`, `≤ ${TARGET}×: ${verdict(pBin.wallRatio <= TARGET)}`],
    [`\`node dist/berth.cjs port --range ${RANGE} --ttl 2s\``, fmt(pCjs.bWallMs, 1), fmt(pCjs.aWallMs, 1), `${fmt(pCjs.wallRatio, 3)}×`, `${fmt(pCjs.cpuRatio, 3)}×`, `≤ ${CJS_TARGET}×: ${verdict(pCjs.wallRatio <= CJS_TARGET)}`],
    ['`node dist/berth.cjs --version`', fmt(pVer.bWallMs, 1), fmt(pVer.aWallMs, 1), `${fmt(pVer.wallRatio, 3)}×`, `${fmt(pVer.cpuRatio, 3)}×`, `≤ ${VERSION_TARGET}×: ${verdict(pVer.wallRatio <= VERSION_TARGET)}`],
  ];
  const sizes = MODES.map((m) => [`${m}${m === shipped ? ' (shipped)' : ''}`, `${fmt(bins[m].bytes / 2 ** 20, 1)} MiB`, `${fmt((bins[m].bytes - statSync(process.execPath).size) / 2 ** 20, 2)} MiB`, `${fmt(bins[m].buildS, 1)} s`]);
  const body = [
    table(['command', 'wall median ms', 'wall p90 ms', 'wall vs node -e 0', 'CPU median ms', 'CPU vs node -e 0', 'target'], rows),
    '',
    table(['binary start-up mode', 'size', 'over node itself', 'build time'], sizes),
    '',
    table(['paired with `node -e 0`', 'median ms, wall', '`node -e 0` median ms, wall', 'median of per-pair ratios, wall', 'same, CPU', 'target'], pairedRows),
    '',
    `${pairs} pairs after 3 warm-up pairs, each pair one \`node -e 0\` and one \`berth port\` (or \`--version\`) back to back, which goes first alternating (bench/lib/paired.ts); the figure is the median of the per-pair ratios, so load that lasts longer than a pair cancels.`,
    '',
    `Median of ${n} rounds after ${warm} warm-up rounds, every command once per round in the order of the table; each run timed by a python helper around posix_spawn + wait4 (wall time, and the child's own user + sys CPU time from its rusage, which a busy machine disturbs far less than wall time). ` +
      `Each binary is scripts/build-bin.mjs's output for that mode, built from the same sources by this run with node ${process.version} (${fmt(statSync(process.execPath).size / 2 ** 20, 1)} MiB): ` +
      '`snapshot` stores a V8 start-up snapshot taken after every command\'s code was evaluated (src/cli/sea-snapshot.ts); `code-cache` stores V8\'s compiled code for the bundle; `plain` stores the bundle\'s source alone. ' +
      `\`berth port\` leases a new port each call in a fresh private BERTH_STATE_DIR, in the host's network namespace. The shipped mode is \`${shipped}\` (build-bin.mjs's default).`,
  ].join('\n');
  return {
    title,
    body,
    summary: [
      { what: `single executable (${shipped}) \`berth port\` / \`node -e 0\`, wall`, measured: `${fmt(shippedPort.wall, 2)}× (${fmt(med(wall, `${shipped}-p`), 1)} vs ${fmt(floor.wall, 1)} ms)`, target: `≤ ${TARGET}×`, verdict: verdict(shippedPort.wall <= TARGET) },
      { what: `single executable (${shipped}) \`berth port\` / \`node -e 0\`, CPU`, measured: `${fmt(shippedPort.cpu, 2)}× (${fmt(med(cpu, `${shipped}-p`), 1)} vs ${fmt(floor.cpu, 1)} ms)`, target: `≤ ${TARGET}×`, verdict: verdict(shippedPort.cpu <= TARGET) },
      { what: `\`berth port\`, single executable (${shipped}) / \`node -e 0\`, paired`, measured: `${fmt(pBin.wallRatio, 3)}× wall, ${fmt(pBin.cpuRatio, 3)}× CPU`, target: `≤ ${TARGET}×`, verdict: verdict(pBin.wallRatio <= TARGET), goal: 'port-bin' as const },
      { what: '`berth port`, `node dist/berth.cjs` / `node -e 0`, paired', measured: `${fmt(pCjs.wallRatio, 3)}× wall, ${fmt(pCjs.cpuRatio, 3)}× CPU`, target: `≤ ${CJS_TARGET}×`, verdict: verdict(pCjs.wallRatio <= CJS_TARGET), goal: 'port-cjs' as const },
      { what: '`node dist/berth.cjs --version` / `node -e 0`, paired', measured: `${fmt(pVer.wallRatio, 3)}× wall, ${fmt(pVer.cpuRatio, 3)}× CPU`, target: `≤ ${VERSION_TARGET}×`, verdict: verdict(pVer.wallRatio <= VERSION_TARGET), goal: 'version-cjs' as const },
      { what: 'single executable size', measured: `${fmt(bins[shipped].bytes / 2 ** 20, 1)} MiB`, target: '—', verdict: 'reported' },
    ],
  };
}
