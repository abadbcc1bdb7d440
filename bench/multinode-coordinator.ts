/**
 * Child of bench/multinode-emulation.ts, run in a fresh network namespace: the coordinator
 * of a multi-node stack, through the same code as `berth up` on the first node of an
 * allocation (parseStack, planNodes, runMultiNodeStack), with a Slurm environment of N
 * emulated nodes (n[1-N]) and bench/multinode-srun.ts as `srun` (and a `scontrol` that gives
 * every node the address 127.0.0.1) on PATH. It times the stack from the start to ready
 * (every node's node file says ready) and from stop() to done, and measures its own CPU
 * (process.cpuUsage, this process only) and how many node files it read (readFileSync is
 * counted for paths under nodes/, patched before berth's code is loaded).
 * argv[2]: JSON {n, replicas, pollMs, mode, agentReadyMs, berth, srun, dir}.
 */
import fs, { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';

interface Cfg {
  n: number;
  replicas: number;
  pollMs: number;
  mode: 'full' | 'protocol';
  agentReadyMs: number;
  berth: string;
  srun: string;
  dir: string;
}
const cfg = JSON.parse(process.argv[2] ?? '{}') as Cfg;

let nodeFileReads = 0;
const realRead = fs.readFileSync;
(fs as { readFileSync: typeof fs.readFileSync }).readFileSync = ((path: fs.PathOrFileDescriptor, o?: unknown) => {
  if (typeof path === 'string' && path.includes('/nodes/') && path.endsWith('.json')) nodeFileReads++;
  return (realRead as (p: fs.PathOrFileDescriptor, o?: unknown) => string | Buffer)(path, o);
}) as typeof fs.readFileSync;
syncBuiltinESMExports();

const { parseStack } = await import('../src/stack/file/load.js');
const { planNodes, runMultiNodeStack } = await import('../src/stack/multi-node/index.js');
const { compressHostlist } = await import('../src/slurm/hostlist.js');

const bin = join(cfg.dir, 'bin');
mkdirSync(bin, { recursive: true });
writeFileSync(join(bin, 'srun'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(cfg.srun)} "$@"\n`, { mode: 0o755 });
const nodes = Array.from({ length: cfg.n }, (_, i) => `n${i + 1}`);
const stackFile = join(cfg.dir, 'stack.yaml');
writeFileSync(
  stackFile,
  ['services:', '  engine:', '    nodes: all', `    replicas: ${cfg.replicas}`, '    handoff: fd', '    command: [sleep, "3600"]', '    stop_grace: 5s', ''].join('\n'),
);
const statsFile = join(cfg.dir, 'srun-stats.json');
const env: NodeJS.ProcessEnv = {
  ...process.env,
  PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
  SLURM_JOB_ID: '4242',
  SLURM_JOB_NODELIST: compressHostlist(nodes),
  SLURMD_NODENAME: 'n1',
  SLURM_NODEID: '0',
  BERTH_STATE_DIR: join(cfg.dir, 'state'),
  BENCH_AGENT_MODE: cfg.mode,
  BENCH_AGENT_READY_MS: String(cfg.agentReadyMs),
  BENCH_SRUN_STATS: statsFile,
};
// The emulated node names resolve nowhere; berth asks scontrol for NodeAddr, answered here.
const addrFile = join(cfg.dir, 'node-addrs.txt');
writeFileSync(addrFile, nodes.map((n) => `NodeName=${n} NodeAddr=127.0.0.1\n`).join(''));
writeFileSync(join(bin, 'scontrol'), `#!/bin/sh\ncat ${JSON.stringify(addrFile)}\n`, { mode: 0o755 });
process.env.PATH = env.PATH; // nodeAddresses() runs scontrol with this process's environment

const spec = parseStack(readFileSync(stackFile, 'utf8'), stackFile, cfg.dir);
const plan = planNodes(spec, env);
if (!plan) throw new Error('planNodes: not a multi-node stack');
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const handle = runMultiNodeStack(spec, plan, {
  stackFile,
  berth: [process.execPath, cfg.berth],
  env,
  runDir: join(cfg.dir, 'run'),
  status: 'off',
  stdout: null,
  stderr: null,
  pollMs: cfg.pollMs,
  onMessage: () => {},
});
let readyMs: number | undefined;
let readyAt = 0;
let readsAtReady = 0;
try {
  await handle.ready;
  readyMs = performance.now() - t0;
  readyAt = performance.timeOrigin + performance.now();
  readsAtReady = nodeFileReads;
} catch (e) {
  process.stderr.write(`[multinode] not ready: ${(e as Error).message}\n`);
}
const cpuReady = process.cpuUsage(cpu0);
const t1 = performance.now();
const result = await handle.stop({ signal: 'SIGTERM' });
const teardownMs = performance.now() - t1;
const cpu = process.cpuUsage(cpu0);
let srun: { nodeFileWrites?: number; lastReadyAt?: number } = {};
try {
  srun = JSON.parse(readFileSync(statsFile, 'utf8')) as typeof srun;
} catch {
  // full mode with a killed srun
}
process.stdout.write(
  JSON.stringify({
    n: cfg.n,
    mode: cfg.mode,
    pollMs: cfg.pollMs,
    readyMs: readyMs ?? null,
    teardownMs,
    exitCode: result.exitCode,
    cpuToReadyMs: (cpuReady.user + cpuReady.system) / 1000,
    cpuMs: (cpu.user + cpu.system) / 1000,
    nodeFileReads: readsAtReady,
    nodeFileWrites: cfg.mode === 'protocol' ? (srun.nodeFileWrites ?? null) : null,
    // protocol mode: from the last node's ready write to the coordinator seeing every node ready
    rendezvousLagMs: cfg.mode === 'protocol' && srun.lastReadyAt ? readyAt - srun.lastReadyAt : null,
  }) + '\n',
);
process.exit(0);
