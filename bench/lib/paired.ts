/**
 * Paired timing of two commands (issue 23): A and B run alternately, pair after pair (which of
 * the two goes first alternates too), and the figure is the median of the per-pair ratios
 * B/A. Machine noise that lasts longer than one pair (another job's burst, the page cache)
 * hits both sides of a pair alike and cancels in its ratio; timed apart, the same commands
 * could not tell 1.04× from 1.33×. Each run is timed by a python helper around posix_spawn +
 * wait4: wall time, and the child's own user + sys CPU from its rusage.
 */
import { spawnSync } from 'node:child_process';
import { median } from './stats.js';

const TIMER = `import json, os, sys, time
cfg = json.loads(sys.argv[1])
null = os.open('/dev/null', os.O_WRONLY)
def run(argv):
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, null, 1)])
    _, status, ru = os.wait4(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.stderr.write(' '.join(argv) + ' exited ' + str(code) + '\\n')
        sys.exit(1)
    return [(time.perf_counter() - t0) * 1000, (ru.ru_utime + ru.ru_stime) * 1000]
out = []
for i in range(cfg['warm'] + cfg['pairs']):
    if cfg['b'] is None:
        a = run(cfg['a'])
        if i >= cfg['warm']:
            out.append([a, a])
        continue
    if i % 2 == 0:
        a = run(cfg['a']); b = run(cfg['b'])
    else:
        b = run(cfg['b']); a = run(cfg['a'])
    if i >= cfg['warm']:
        out.append([a, b])
print(json.dumps(out))`;

export interface Paired {
  pairs: number;
  /** Median of per-pair wall-time ratios B/A. */
  wallRatio: number;
  /** Median of per-pair CPU-time ratios B/A. */
  cpuRatio: number;
  aWallMs: number;
  bWallMs: number;
  aCpuMs: number;
  bCpuMs: number;
}

function timer(a: string[], b: string[] | null, runs: number, env: NodeJS.ProcessEnv, warm: number): [[number, number], [number, number]][] {
  const r = spawnSync('/usr/bin/python3', ['-c', TIMER, JSON.stringify({ a, b, pairs: runs, warm })], { env, encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`timing failed: ${r.stderr.trim().slice(0, 400)}`);
  return JSON.parse(r.stdout) as [[number, number], [number, number]][];
}

/**
 * One command `runs` times in a row after `warm` unrecorded runs: median wall and CPU ms. For
 * what cannot be paired, e.g. a host before and after it fills up; the load must then be quiet.
 */
export function series(a: string[], runs: number, env: NodeJS.ProcessEnv = process.env, warm = 3): { wallMs: number; cpuMs: number } {
  const out = timer(a, null, runs, env, warm);
  return { wallMs: median(out.map(([x]) => x[0])), cpuMs: median(out.map(([x]) => x[1])) };
}

/** Time `a` and `b` in `pairs` alternating pairs after `warm` unrecorded ones. */
export function paired(a: string[], b: string[], pairs: number, env: NodeJS.ProcessEnv = process.env, warm = 3): Paired {
  const out = timer(a, b, pairs, env, warm);
  return {
    pairs: out.length,
    wallRatio: median(out.map(([x, y]) => y[0] / x[0])),
    cpuRatio: median(out.map(([x, y]) => y[1] / x[1])),
    aWallMs: median(out.map(([x]) => x[0])),
    bWallMs: median(out.map(([, y]) => y[0])),
    aCpuMs: median(out.map(([x]) => x[1])),
    bCpuMs: median(out.map(([, y]) => y[1])),
  };
}
