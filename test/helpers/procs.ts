/**
 * Finds the processes of a test run by an environment entry the test gave berth
 * (berth passes its environment on to every service, daemons and its watchdog included),
 * the way berth's own watchdog finds a run by BERTH_RUN_ID.
 */
import { readFileSync, readdirSync } from 'node:fs';

/** Live (not zombie) pids whose environment holds `entry` ("NAME=value"; make the value unique). */
export function pidsWithEnv(entry: string): number[] {
  const needle = Buffer.from(entry);
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const env = readFileSync(`/proc/${name}/environ`);
      if (!env.includes(needle)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state !== 'Z' && state !== 'X') out.push(Number(name));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

/** The command line of pid, for messages. */
export function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ').trim();
  } catch {
    return '(gone)';
  }
}

/** Polls until no process carries `entry`; resolves with the ms it took, or the survivors after `withinMs`. */
export async function waitGone(entry: string, withinMs: number): Promise<{ ms: number; left: string[] }> {
  const t0 = performance.now();
  for (;;) {
    const pids = pidsWithEnv(entry);
    const ms = Math.round(performance.now() - t0);
    if (pids.length === 0) return { ms, left: [] };
    if (ms >= withinMs) return { ms, left: pids.map((p) => `${p} ${cmdline(p)}`) };
    await new Promise((r) => setTimeout(r, 20));
  }
}
