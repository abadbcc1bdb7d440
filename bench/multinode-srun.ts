/**
 * A stand-in for `srun` in bench/multinode-emulation.ts: berth's coordinator runs
 * `srun --nodes=N … --nodelist=LIST --input=all … -- AGENT…` (src/slurm/agent-step.ts
 * agentStepArgv) and this starts one agent per node of LIST on this host, with the
 * variables Slurm gives a step's task (SLURMD_NODENAME, SLURM_NODEID, SLURM_PROCID,
 * SLURM_STEP_ID, SLURM_STEP_NODELIST), and hands its stdin to every agent (--input=all).
 * BENCH_AGENT_MODE:
 *   full      each agent is the real `berth up STACK --agent RUN_DIR` process;
 *   protocol  the agents are emulated in this one process: each writes its node file with
 *             the real writeNodeFile() (starting, then ready with 4 endpoints after
 *             BENCH_AGENT_READY_MS ± 20%, stopped on "stop" or EOF), exactly the file
 *             protocol of src/stack/multi-node/agent.ts runAgent, without running services.
 * Writes {nodeFileWrites, agents, lastReadyAt} to BENCH_SRUN_STATS at exit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { expandHostlist } from '../src/slurm/hostlist.js';
import { writeNodeFile, type NodeFile } from '../src/stack/multi-node/node-files.js';

const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
const opts = argv.slice(0, dash);
const agent = argv.slice(dash + 1);
const list = opts.find((o) => o.startsWith('--nodelist='))?.slice('--nodelist='.length) ?? '';
const nodes = expandHostlist(list);
const mode = process.env.BENCH_AGENT_MODE ?? 'full';
let nodeFileWrites = 0;
/** When the last emulated node wrote ready (epoch ms, sub-ms). */
let lastReadyAt = 0;

function stats(): void {
  if (process.env.BENCH_SRUN_STATS) writeFileSync(process.env.BENCH_SRUN_STATS, JSON.stringify({ nodeFileWrites, agents: nodes.length, lastReadyAt }));
}

if (mode === 'full') {
  const kids: ChildProcess[] = nodes.map((node, i) =>
    spawn(agent[0]!, agent.slice(1), {
      env: { ...process.env, SLURMD_NODENAME: node, SLURM_NODEID: String(i), SLURM_PROCID: String(i), SLURM_LOCALID: '0', SLURM_STEP_ID: '0', SLURM_STEP_NODELIST: list },
      stdio: ['pipe', 'inherit', 'inherit'],
    }),
  );
  for (const k of kids) k.stdin!.on('error', () => {});
  process.stdin.on('data', (d) => kids.forEach((k) => k.stdin!.write(d)));
  process.stdin.on('end', () => kids.forEach((k) => k.stdin!.end()));
  const codes = await Promise.all(kids.map((k) => new Promise<number>((r) => k.on('exit', (c) => r(c ?? 1)))));
  stats();
  process.exit(Math.max(0, ...codes));
} else {
  const runDir = agent[agent.indexOf('--agent') + 1]!;
  const readyMs = Number(process.env.BENCH_AGENT_READY_MS ?? '1000');
  const files = nodes.map((node, i): NodeFile => ({ node, pid: 100000 + i, state: 'starting', updated: new Date().toISOString(), services: {} }));
  const publish = (f: NodeFile, patch: Partial<NodeFile>) => {
    Object.assign(f, patch, { updated: new Date().toISOString() });
    writeNodeFile(runDir, f);
    nodeFileWrites++;
  };
  for (const f of files) publish(f, {});
  const timers = files.map((f, i) =>
    setTimeout(
      () => {
        publish(f, { state: 'ready', services: { engine: [0, 1, 2, 3].map((r) => ({ replica: r, host: '0.0.0.0', port: 20000 + i * 4 + r })) } });
        lastReadyAt = performance.timeOrigin + performance.now();
      },
      readyMs * (0.8 + 0.4 * Math.random()),
    ),
  );
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    timers.forEach((t) => clearTimeout(t));
    for (const f of files) publish(f, { state: 'stopped', exitCode: 0 });
    stats();
    process.exit(0);
  };
  let buf = '';
  process.stdin.on('data', (d) => {
    buf += d.toString();
    if (/(^|\n)stop\s*(\n|$)/.test(buf)) stop();
  });
  process.stdin.on('end', stop);
}
