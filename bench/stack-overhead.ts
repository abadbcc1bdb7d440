/**
 * What `berth up` itself costs on a stack of 16 trivial HTTP servers (no dependencies, so
 * all start together; each has an HTTP readiness probe):
 *   readyToReportedMs  from the last service's own readiness (its listen() callback) to berth
 *                      reporting the stack ready (the --json endpoints line arriving here);
 *                      median over RUNS stacks
 *   cpuMs              berth's own user+sys CPU for a whole run (start, ready, SIGTERM,
 *                      teardown), median over the runs; the services' CPU is not included
 * Times: every service prints process.hrtime (CLOCK_MONOTONIC, shared by all processes on
 * the host) from its listen callback; this process reads the same clock when the ready line
 * arrives. Each service waits a random 100-600 ms before listening, so berth's polling phase
 * is not lucky. berth's CPU comes from process.resourceUsage() in its own exit handler,
 * loaded with --import. Stacks run in a fresh network namespace when one can be made.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { netnsArgv, netnsUnavailable } from '../test/helpers/netns.js';

const ROOT = resolve(import.meta.dirname, '..');
const BERTH = process.env.BERTH_BENCH_BIN ?? join(ROOT, 'dist/berth.js');
const SERVICES = 16;
const RUNS = 7;

const SERVER = `import http from 'node:http';
const [port, delay] = process.argv.slice(2).map(Number);
process.on('SIGTERM', () => process.exit(0));
setTimeout(() => {
  http.createServer((q, r) => r.end('ok')).listen(port, '127.0.0.1', () => console.log('ready ' + process.hrtime.bigint()));
}, delay);
`;

/** Writes berth's own CPU time (µs, user and system) to $BENCH_CPU_FILE when it exits. */
const CPU_HOOK =
  'data:text/javascript,' +
  encodeURIComponent(
    "import { writeFileSync } from 'node:fs'; process.on('exit', () => { const u = process.resourceUsage(); writeFileSync(process.env.BENCH_CPU_FILE, JSON.stringify({ user: u.userCPUTime, system: u.systemCPUTime })); });",
  );

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function stackYaml(server: string): string {
  const lines = ['services:'];
  for (let i = 0; i < SERVICES; i++) {
    const delay = 100 + Math.floor(Math.random() * 500);
    lines.push(
      `  s${i}:`,
      `    command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(server)}, "{port}", "${delay}"]`,
      '    ready: http://127.0.0.1:{port}/',
      '    stop_grace: 2s',
    );
  }
  return lines.join('\n') + '\n';
}

interface Sample {
  readyToReportedMs: number;
  cpuMs: number;
}

async function once(dir: string, server: string, netns: boolean, n: number): Promise<Sample> {
  const stack = join(dir, `stack-${n}.yaml`);
  writeFileSync(stack, stackYaml(server));
  const runDir = join(dir, `run-${n}`);
  const cpuFile = join(dir, `cpu-${n}.json`);
  const argv = [...(netns ? netnsArgv() : []), process.execPath, '--import', CPU_HOOK, BERTH, 'up', stack, '--run-dir', runDir, '--json'];
  const child = spawn(argv[0]!, argv.slice(1), {
    env: { ...process.env, NO_COLOR: '1', BENCH_CPU_FILE: cpuFile, BERTH_STATE_DIR: join(dir, 'state') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  let reportedNs: bigint | undefined;
  child.stdout.on('data', () => {
    if (reportedNs !== undefined) return;
    reportedNs = process.hrtime.bigint();
    child.kill('SIGTERM'); // the stack is up: measure the teardown too
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((r) => child.on('close', (c) => r(c)));
  clearTimeout(timer);
  if (reportedNs === undefined) throw new Error(`berth up never reported the stack ready (exit ${code}):\n${stderr}`);
  if (code !== 143) throw new Error(`berth up ended with ${code}, expected 143 after SIGTERM:\n${stderr}`);
  let lastReady = 0n;
  for (let i = 0; i < SERVICES; i++) {
    const m = /ready (\d+)/.exec(readFileSync(join(runDir, 'logs', `s${i}-0.out`), 'utf8'));
    if (!m) throw new Error(`service s${i} logged no ready stamp`);
    const t = BigInt(m[1]!);
    if (t > lastReady) lastReady = t;
  }
  const cpu = JSON.parse(readFileSync(cpuFile, 'utf8')) as { user: number; system: number };
  return { readyToReportedMs: Number(reportedNs - lastReady) / 1e6, cpuMs: (cpu.user + cpu.system) / 1000 };
}

export async function benchStackOverhead(): Promise<{ readyToReportedMs: number; cpuMs: number; services: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-bench-up-'));
  try {
    const server = join(dir, 'server.mjs');
    writeFileSync(server, SERVER);
    const netns = netnsUnavailable() === undefined;
    const samples: Sample[] = [];
    for (let n = 0; n < RUNS; n++) samples.push(await once(dir, server, netns, n));
    return {
      readyToReportedMs: Math.round(median(samples.map((s) => s.readyToReportedMs)) * 10) / 10,
      cpuMs: Math.round(median(samples.map((s) => s.cpuMs))),
      services: SERVICES,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  console.log(JSON.stringify(await benchStackOverhead()));
}
