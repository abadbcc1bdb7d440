/**
 * By hand: berth's CPU per replica at N replicas (bench/run.ts section 9's figure, without
 * the floor), for one or more builds or settings, alternated run by run so the machine's
 * load falls on each alike. How the CPU-per-replica regressions were bisected.
 *
 *   node --import tsx bench/cpu-per-replica.ts [--n 256] [--runs 3] [--profile DIR] LABEL=BERTH[,VAR=VALUE…]…
 *
 * BERTH is a berth.js (or berth.cjs) of any build, e.g. a scratch worktree's dist; VAR=VALUE
 * pairs go into that variant's environment (BERTH_CGROUP=off). Each run is one fresh network
 * namespace (bench/scale-up-child.ts with noFloor); prints one line per run and, at the end,
 * each variant's median of berth + watchdog CPU and that per replica.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { summarizeProfile } from './lib/cpu-profile.js';
import { BenchContext } from './lib/context.js';
import { runChildInNetns } from './lib/netns.js';
import { median } from './lib/stats.js';
import type { Config, Result } from './scale-up-child.js';

const { values, positionals } = parseArgs({
  options: { n: { type: 'string', default: '256' }, runs: { type: 'string', default: '3' }, profile: { type: 'string' } },
  allowPositionals: true,
});
const n = Number(values.n);
const runs = Number(values.runs);
const variants = positionals.map((p) => {
  const [label, rest] = [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)];
  const [berth, ...vars] = rest.split(',');
  return { label, berth: berth!, env: Object.fromEntries(vars.map((v) => [v.slice(0, v.indexOf('=')), v.slice(v.indexOf('=') + 1)])), cpu: [] as number[] };
});
if (variants.length === 0 || !(n > 0) || !(runs > 0)) {
  process.stderr.write('usage: cpu-per-replica.ts [--n N] [--runs R] [--profile DIR] LABEL=BERTH[,VAR=VALUE…]…\n');
  process.exit(64);
}

const ctx = new BenchContext(false);
/** The 1-minute load average: the machine is shared, and each line says how busy it was. */
const load = () => readFileSync('/proc/loadavg', 'latin1').split(' ')[0];
try {
  const scripts = await ctx.childScripts();
  for (let r = 0; r < runs; r++) {
    // Alternate the order each round so no variant always runs right after another's teardown.
    const order = r % 2 === 0 ? variants : [...variants].reverse();
    for (const v of order) {
      const profileDir = values.profile ? `${values.profile}/${v.label}-${r}` : undefined;
      const cfg: Config = { berth: v.berth, ns: [n], runs: 1, noFloor: true, ...(profileDir ? { profileNs: [n], profileDir } : {}) };
      const before = load();
      const res = await runChildInNetns<Result>(scripts['scale-up-child'], cfg, { maxFiles: true, timeoutMs: 1_800_000, env: { ...process.env, ...v.env } });
      const s = res.samples[0]!;
      const cpu = s.cpuMs + (s.watchdogCpuMs ?? 0);
      v.cpu.push(cpu);
      const prof = res.profiles[0] ? ` profile ${res.profiles[0]} (${summarizeProfile(res.profiles[0], []).totalMs.toFixed(0)} ms sampled)` : '';
      const what = `berth ${s.cpuMs.toFixed(0)} + watchdog ${s.watchdogCpuMs ?? 0} ms = ${(cpu / n).toFixed(1)} ms/replica`;
      const when = `ready ${s.readyMs.toFixed(0)} ms, teardown ${s.teardownMs.toFixed(0)} ms, load ${before} -> ${load()}`;
      process.stdout.write(`${v.label} run ${r + 1}: ${what}, ${when}${prof}\n`);
    }
  }
  for (const v of variants) {
    const m = median(v.cpu);
    process.stdout.write(`${v.label}: median ${m.toFixed(0)} ms, ${(m / n).toFixed(1)} ms/replica (runs: ${v.cpu.map((c) => c.toFixed(0)).join(', ')})\n`);
  }
} finally {
  ctx.cleanup();
}
