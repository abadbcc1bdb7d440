/**
 * Child of bench/scale-up.ts, run in a fresh network namespace: for each N, starts N
 * trivial Node HTTP servers twice, interleaved per repetition,
 *   floor  one small Node process spawns the N servers (each in its own session, as berth
 *          does: with CFS autogroups a session is a scheduling group, so N servers sharing
 *          one session get one share of a busy machine) and GETs each not-yet-ready one
 *          every 20 ms (http.get, no keep-alive) until all answer 200;
 *   berth  `berth up` of one service with `replicas: N` and `ready: http://…/`;
 * and times, from this process's spawn() of the floor / berth process:
 *   readyMs     until it prints that everything is ready (the floor's line, berth's --json line)
 *   teardownMs  from SIGTERM until it has exited and no server process is left in /proc
 * berth's CPU: its own process.resourceUsage() (RUSAGE_SELF: user+sys, never the services')
 * taken in its 'exit' handler (loaded with --import), plus its watchdog's utime+stime read
 * from /proc/<watchdog>/stat at that moment (clock ticks; the watchdog is berth's child and
 * outlives it by a few ms). The floor reports its own resourceUsage() the same way.
 * Optionally the namespace is loaded first: `load.sockets` loopback sockets (held by two
 * helper processes, as bench/socket-table.ts does) and `load.processes` sleeping processes.
 * argv[2]: JSON Config. Prints progress on stderr and one JSON line (Result) on stdout.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface Config {
  berth: string;
  /** Socket holder script (bench/socket-holder-child.ts, bundled). */
  holder?: string;
  ns: number[];
  runs: number;
  load?: { sockets: number; processes: number };
  /**
   * Instead of `load`: each run is a pair, berth on the idle namespace, then the load made, berth
   * again, and the load taken away (connections reset: no TIME_WAIT stays), so that the two
   * sides of a pair are minutes apart at most and the machine's own noise mostly cancels.
   */
  pairedLoad?: { sockets: number; processes: number };
  /** Write a V8 CPU profile of berth (--cpu-prof) for these N (first repetition only). */
  profileNs?: number[];
  profileDir?: string;
  /** Skip the floor (profiling runs). */
  noFloor?: boolean;
}

export interface Sample {
  n: number;
  kind: 'floor' | 'berth';
  readyMs: number;
  teardownMs: number;
  /** Own user+sys CPU of the floor / berth process (ms). */
  cpuMs: number;
  /** berth only: its watchdog's user+sys CPU (ms, 10 ms resolution). */
  watchdogCpuMs?: number;
  maxRssKb?: number;
  /** pairedLoad: whether this run had the load. */
  loaded?: boolean;
}

export interface Result {
  samples: Sample[];
  load?: { sockets: number; processes: number; tableRows: number };
  profiles: string[];
  clkTck: number;
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as Config;
const log = (m: string) => process.stderr.write(`[scale-up] ${m}\n`);
const now = () => performance.now();
const CLK_TCK = 100; // USER_HZ on Linux: /proc/<pid>/stat times are in 1/100 s

const SERVER = `import http from 'node:http';
process.on('SIGTERM', () => process.exit(0));
http.createServer((q, r) => r.end('ok')).listen(Number(process.argv[2]), '127.0.0.1');
`;

const FLOOR = `import { spawn } from 'node:child_process';
import http from 'node:http';
import { writeFileSync } from 'node:fs';
const [server, nText, baseText, cpuFile] = process.argv.slice(2);
const n = Number(nText), base = Number(baseText);
const kids = [];
// detached (setsid) as berth starts its services: with the scheduler's autogroups each
// session gets its own share of a busy machine, so the floor's servers must not share one.
for (let i = 0; i < n; i++) kids.push(spawn(process.execPath, [server, String(base + i)], { stdio: 'ignore', detached: true }));
const exited = kids.map((k) => new Promise((r) => k.on('exit', r)));
const ready = new Array(n).fill(false);
const inflight = new Array(n).fill(false);
let left = n;
const tick = setInterval(() => {
  for (let i = 0; i < n; i++) {
    if (ready[i] || inflight[i]) continue;
    inflight[i] = true;
    const req = http.get({ host: '127.0.0.1', port: base + i, path: '/', agent: false }, (res) => {
      res.resume();
      inflight[i] = false;
      if (res.statusCode === 200 && !ready[i]) { ready[i] = true; if (--left === 0) { clearInterval(tick); process.stdout.write('ready\\n'); } }
    });
    req.on('error', () => { inflight[i] = false; });
  }
}, 20);
process.on('SIGTERM', async () => {
  clearInterval(tick);
  for (const k of kids) k.kill('SIGTERM');
  await Promise.all(exited);
  const u = process.resourceUsage();
  writeFileSync(cpuFile, JSON.stringify({ user: u.userCPUTime, system: u.systemCPUTime, maxRss: u.maxRSS }));
  process.exit(0);
});
`;

/** berth's CPU (and its watchdog's, read from /proc while berth still runs) at its exit. */
const CPU_HOOK =
  'data:text/javascript,' +
  encodeURIComponent(`import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
process.on('exit', () => {
  const u = process.resourceUsage();
  let watchdog = null;
  try {
    for (const t of readdirSync('/proc/self/task')) {
      for (const c of readFileSync('/proc/self/task/' + t + '/children', 'latin1').trim().split(' ').filter(Boolean)) {
        if (!readFileSync('/proc/' + c + '/cmdline', 'latin1').includes('watchdog')) continue;
        const st = readFileSync('/proc/' + c + '/stat', 'latin1');
        const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
        watchdog = { pid: Number(c), ticks: Number(f[11]) + Number(f[12]) };
      }
    }
  } catch {}
  writeFileSync(process.env.BENCH_CPU_FILE, JSON.stringify({ user: u.userCPUTime, system: u.systemCPUTime, maxRss: u.maxRSS, watchdog }));
});`);

function stackYaml(server: string, n: number): string {
  return [
    'services:',
    '  s:',
    `    replicas: ${n}`,
    `    command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(server)}, "{port}"]`,
    '    ready: http://127.0.0.1:{port}/',
    '    stop_grace: 5s',
    '',
  ].join('\n');
}

/** Pids whose command line mentions `needle` (the run's own server script). */
function survivors(needle: string): number {
  let n = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'latin1').includes(needle)) n++;
    } catch {
      // gone
    }
  }
  return n;
}

async function allGone(needle: string): Promise<void> {
  for (let i = 0; i < 30_000 && survivors(needle) > 0; i++) await new Promise((r) => setTimeout(r, 2));
}

interface Timed {
  readyMs: number;
  teardownMs: number;
  stderr: string;
}

/** Spawn, wait for the first stdout line, SIGTERM, wait until it and every server are gone. */
async function timeProcess(argv: string[], env: NodeJS.ProcessEnv, needle: string, timeoutMs: number): Promise<Timed> {
  const t0 = now();
  const child: ChildProcess = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
  const closed = new Promise<number | null>((r) => child.on('close', (c) => r(c)));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const line = await new Promise<boolean>((resolve) => {
    createInterface({ input: child.stdout! }).once('line', () => resolve(true));
    void closed.then(() => resolve(false));
  });
  const readyMs = now() - t0;
  if (!line) {
    clearTimeout(timer);
    throw new Error(`${argv.slice(0, 4).join(' ')} ended before it was ready:\n${stderr}`);
  }
  const t1 = now();
  child.kill('SIGTERM');
  await closed;
  await allGone(needle);
  const teardownMs = now() - t1;
  clearTimeout(timer);
  return { readyMs, teardownMs, stderr };
}

function readCpu(file: string): { user: number; system: number; maxRss: number; watchdog?: { ticks: number } | null } {
  return JSON.parse(readFileSync(file, 'utf8')) as { user: number; system: number; maxRss: number; watchdog?: { ticks: number } | null };
}

async function floorOnce(dir: string, server: string, floor: string, n: number, k: string): Promise<Sample> {
  const cpuFile = join(dir, `floor-cpu-${k}.json`);
  const t = await timeProcess([process.execPath, floor, server, String(n), '20000', cpuFile], process.env, server, 120_000);
  const cpu = readCpu(cpuFile);
  return { n, kind: 'floor', readyMs: t.readyMs, teardownMs: t.teardownMs, cpuMs: (cpu.user + cpu.system) / 1000, maxRssKb: cpu.maxRss };
}

async function berthOnce(dir: string, server: string, n: number, k: string, profile: string | undefined): Promise<Sample> {
  const stack = join(dir, `stack-${k}.yaml`);
  writeFileSync(stack, stackYaml(server, n));
  const cpuFile = join(dir, `berth-cpu-${k}.json`);
  const prof = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`, '--cpu-prof-name', `berth-up-${n}.cpuprofile`] : [];
  const argv = [process.execPath, ...prof, '--import', CPU_HOOK, cfg.berth, 'up', stack, '--run-dir', join(dir, `run-${k}`), '--json'];
  const env = { ...process.env, NO_COLOR: '1', BENCH_CPU_FILE: cpuFile, BERTH_STATE_DIR: join(dir, 'state') };
  const t = await timeProcess(argv, env, server, 300_000);
  const cpu = readCpu(cpuFile);
  const s: Sample = { n, kind: 'berth', readyMs: t.readyMs, teardownMs: t.teardownMs, cpuMs: (cpu.user + cpu.system) / 1000, maxRssKb: cpu.maxRss };
  if (cpu.watchdog) s.watchdogCpuMs = (cpu.watchdog.ticks * 1000) / CLK_TCK;
  return s;
}

function tableRows(): number {
  let rows = 0;
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    try {
      rows += readFileSync(f, 'latin1').split('\n').length - 2;
    } catch {
      // no tcp6
    }
  }
  return rows;
}

/** The namespace loaded with sockets and processes; drop() takes it all away again. */
async function makeLoad(want: { sockets: number; processes: number }): Promise<{ load: NonNullable<Result['load']>; drop: () => Promise<void> }> {
  const t0 = now();
  const mine: ChildProcess[] = [];
  // Each connection is two sockets (both ends) in the table; pairs of holders keep each
  // process under its open-file limit.
  for (let left = Math.ceil(want.sockets / 2); left > 0; left -= 8_000) {
    const srv = await startHolder({ role: 'server' });
    mine.push(srv.child);
    const cl = await startHolder({ role: 'clients', count: Math.min(8_000, left), ...srv.report });
    mine.push(cl.child);
  }
  const holders = mine.length;
  for (let i = 0; i < want.processes; i++) mine.push(spawn('sleep', ['3600'], { stdio: 'ignore' }));
  held.push(...mine);
  await new Promise((r) => setTimeout(r, 500));
  const load = { sockets: want.sockets, processes: want.processes, tableRows: tableRows() };
  log(`loaded: ${load.tableRows} socket rows, ${want.processes} extra processes, in ${((now() - t0) / 1000).toFixed(1)} s`);
  const drop = async () => {
    const gone = mine.map((c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(null) : c.once('exit', r))));
    mine.slice(0, holders).forEach((c) => c.stdin?.end());
    mine.slice(holders).forEach((c) => c.kill('SIGKILL'));
    await Promise.all(gone);
    await new Promise((r) => setTimeout(r, 500));
  };
  return { load, drop };
}

function startHolder(arg: unknown): Promise<{ child: ChildProcess; report: Record<string, number> }> {
  const child = spawn(process.execPath, [cfg.holder!, JSON.stringify(arg)], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) => resolve({ child, report: JSON.parse(line) as Record<string, number> }));
    child.once('exit', (code) => reject(new Error(`socket holder exited ${code} before reporting`)));
  });
}

const dir = mkdtempSync(join(tmpdir(), 'berth-scale-up-'));
const held: ChildProcess[] = [];
try {
  const server = join(dir, 'server.mjs');
  const floor = join(dir, 'floor.mjs');
  writeFileSync(server, SERVER);
  writeFileSync(floor, FLOOR);
  let load: Result['load'];
  if (cfg.load) load = (await makeLoad(cfg.load)).load;
  const profiles: string[] = [];
  const samples: Sample[] = [];
  if (cfg.pairedLoad) {
    for (const n of cfg.ns) {
      for (let r = 0; r < cfg.runs; r++) {
        const idle = await berthOnce(dir, server, n, `${n}-${r}-idle`, undefined);
        samples.push({ ...idle, loaded: false });
        const made = await makeLoad(cfg.pairedLoad);
        load = made.load;
        const busy = await berthOnce(dir, server, n, `${n}-${r}-loaded`, undefined);
        samples.push({ ...busy, loaded: true });
        await made.drop();
        log(`N=${n} pair ${r + 1}/${cfg.runs}: ready idle ${idle.readyMs.toFixed(0)} / loaded ${busy.readyMs.toFixed(0)} ms, cpu ${idle.cpuMs.toFixed(0)} / ${busy.cpuMs.toFixed(0)} ms; table left ${tableRows()} rows`);
        for (const k of ['idle', 'loaded']) rmSync(join(dir, `run-${n}-${r}-${k}`), { recursive: true, force: true });
      }
    }
  }
  for (const n of cfg.pairedLoad ? [] : cfg.ns) {
    for (let r = 0; r < cfg.runs; r++) {
      const k = `${n}-${r}`;
      const profile = r === 0 && cfg.profileNs?.includes(n) && cfg.profileDir ? cfg.profileDir : undefined;
      if (profile) mkdirSync(profile, { recursive: true });
      // Alternate which goes first so neither always runs on a freshly idle machine.
      const order: ('floor' | 'berth')[] = cfg.noFloor ? ['berth'] : r % 2 === 0 ? ['floor', 'berth'] : ['berth', 'floor'];
      for (const kind of order) {
        const s = kind === 'floor' ? await floorOnce(dir, server, floor, n, k) : await berthOnce(dir, server, n, k, profile);
        samples.push(s);
        log(`N=${n} run ${r + 1}/${cfg.runs} ${kind}: ready ${s.readyMs.toFixed(0)} ms, teardown ${s.teardownMs.toFixed(0)} ms, cpu ${s.cpuMs.toFixed(0)} ms${s.watchdogCpuMs !== undefined ? ` (+ watchdog ${s.watchdogCpuMs} ms)` : ''}`);
      }
      if (profile && existsSync(join(profile, `berth-up-${n}.cpuprofile`))) profiles.push(join(profile, `berth-up-${n}.cpuprofile`));
      // Each berth run's state and run dirs are its own; drop them so /tmp does not fill up.
      rmSync(join(dir, `run-${k}`), { recursive: true, force: true });
    }
  }
  const result: Result = { samples, profiles, clkTck: CLK_TCK, ...(load ? { load } : {}) };
  process.stdout.write(JSON.stringify(result) + '\n');
} finally {
  for (const c of held) {
    try {
      c.kill('SIGKILL');
    } catch {
      // gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
