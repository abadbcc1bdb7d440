/**
 * What the foreign-listener check (issue 28.2) costs, side by side with it off
 * (BERTH_FOREIGN_CHECK=off), in one run:
 *   - berth's own CPU (user+sys, from /proc/<pid>/stat) over WINDOW_S seconds of steady state
 *     of a 16-replica `berth up` stack (trivial Node HTTP servers), measured from the stack's
 *     ready line; on and off alternate, PAIRS pairs, each stack in a fresh network namespace;
 *   - `berth port` wall time, on and off interleaved (the check is not on its path: this shows
 *     that nothing of it leaked there).
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { netnsArgv } from '../test/helpers/netns.js';
import type { BenchContext } from './lib/context.js';
import { table, type Section } from './lib/markdown.js';
import { fmt, median, verdict } from './lib/stats.js';
import { timeSpawn } from './lib/time-spawn.js';

const REPLICAS = 16;
const SERVER = `import http from 'node:http';
process.on('SIGTERM', () => process.exit(0));
http.createServer((q, r) => r.end('ok')).listen(Number(process.argv[2]), '127.0.0.1');
`;

/** Clock ticks of user+sys CPU of `pid` (fields 14 and 15 of /proc/PID/stat). */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]);
}

async function steadyCpuMs(ctx: BenchContext, off: boolean, windowS: number, n: number): Promise<number> {
  const dir = ctx.privateDir(`foreign-${off ? 'off' : 'on'}-${n}`);
  writeFileSync(join(dir, 'server.mjs'), SERVER);
  writeFileSync(join(dir, 'stack.yaml'), `services:\n  s:\n    replicas: ${REPLICAS}\n    range: 24000-24999\n    command: [${JSON.stringify(process.execPath)}, server.mjs, "{port}"]\n    ready: http://127.0.0.1:{port}/\n`);
  const cli = join(ctx.repoRoot, 'dist', 'berth.js');
  // unshare and sh exec berth: the child's pid is berth's.
  const argv = [...netnsArgv(), process.execPath, cli, 'up', join(dir, 'stack.yaml'), '--run-dir', join(dir, 'run'), '--json'];
  const env = { ...process.env, NO_COLOR: '1', BERTH_STATE_DIR: join(dir, 'state'), ...(off ? { BERTH_FOREIGN_CHECK: 'off' } : {}) };
  const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const closed = new Promise<number | null>((r) => child.on('close', (c) => r(c)));
  await new Promise<void>((res, rej) => {
    const t = setTimeout(() => rej(new Error(`the stack did not get ready:\n${stderr}`)), 120_000);
    child.stdout.once('data', () => (clearTimeout(t), res()));
    void closed.then((c) => rej(new Error(`berth up exited ${c} before ready:\n${stderr}`)));
  });
  const hz = 100; // USER_HZ on Linux
  const t0 = cpuTicks(child.pid!);
  await new Promise((r) => setTimeout(r, windowS * 1000));
  const t1 = cpuTicks(child.pid!);
  child.kill('SIGTERM');
  await closed;
  return ((t1 - t0) * 1000) / hz;
}

export async function benchForeignAudit(ctx: BenchContext): Promise<Section> {
  const title = '16. The foreign-listener check: its cost';
  const windowS = ctx.quick ? 15 : 60;
  const pairs = ctx.quick ? 1 : 2;
  const on: number[] = [];
  const off: number[] = [];
  for (let i = 0; i < pairs; i++) {
    ctx.log(`foreign: ${REPLICAS}-replica stack, ${windowS} s of steady state with the check off, then on (pair ${i + 1} of ${pairs})`);
    off.push(await steadyCpuMs(ctx, true, windowS, i));
    on.push(await steadyCpuMs(ctx, false, windowS, i));
  }
  const mOn = median(on);
  const mOff = median(off);
  const extra = mOff > 0 ? (mOn - mOff) / mOff : 0;

  const cli = join(ctx.repoRoot, 'dist', 'berth.cjs');
  const n = ctx.quick ? 8 : 21;
  ctx.log(`foreign: berth port, ${n} runs each with the check on and off, interleaved`);
  const port = { on: [] as number[], off: [] as number[] };
  const state = ctx.privateDir('foreign-port-state');
  for (let i = 0; i < n + 2; i++) {
    for (const mode of ['off', 'on'] as const) {
      const env = { ...process.env, BERTH_STATE_DIR: state, ...(mode === 'off' ? { BERTH_FOREIGN_CHECK: 'off' } : {}) };
      const r = await timeSpawn([process.execPath, cli, 'port', '--range', '25000-25999', '--ttl', '1m'], env);
      if (r.code !== 0) throw new Error(`berth port exited ${r.code}: ${r.stderr.slice(0, 300)}`);
      if (i >= 2) port[mode].push(r.ms);
    }
  }
  const pOn = median(port.on);
  const pOff = median(port.off);
  const body = [
    table(
      ['measure', 'check off', 'check on', 'difference', 'target'],
      [
        [`berth's CPU over ${windowS} s of a ready ${REPLICAS}-replica stack (median of ${pairs})`, `${fmt(mOff, 0)} ms`, `${fmt(mOn, 0)} ms`, `${fmt(extra * 100, 1)}%`, `≤ 5%: ${verdict(extra <= 0.05)}`],
        [`\`berth port\` wall time (median of ${n})`, `${fmt(pOff, 1)} ms`, `${fmt(pOn, 1)} ms`, `${fmt(((pOn - pOff) / pOff) * 100, 1)}%`, 'nothing measurable'],
      ],
    ),
    '',
    `bench/foreign-audit.ts: each stack runs in a fresh network namespace; berth's own user+sys CPU (its main process, from /proc/PID/stat) is read when the stack's ready line arrives and ${windowS} s later; the check is switched off with BERTH_FOREIGN_CHECK=off, and on/off stacks alternate. In the steady state the check reads no file descriptor (each listener's inode is judged once), so its cost is a filter over the audit's existing listener read every 3 s. \`berth port\` never runs the check; its two columns are the same command with and without the variable, interleaved.`,
  ].join('\n');
  return {
    title,
    body,
    summary: [
      { what: `foreign-listener check: berth CPU, ${REPLICAS} replicas, ${windowS} s steady state`, measured: `+${fmt(extra * 100, 1)}% (${fmt(mOn, 0)} vs ${fmt(mOff, 0)} ms)`, target: '≤ 5%', verdict: verdict(extra <= 0.05) },
      { what: 'foreign-listener check: `berth port` wall time', measured: `${fmt(pOn, 1)} vs ${fmt(pOff, 1)} ms`, target: 'nothing measurable', verdict: 'reported' },
    ],
  };
}
