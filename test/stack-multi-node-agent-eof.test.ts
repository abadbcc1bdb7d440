/**
 * A multi-node agent whose node ended on its own (a failed rank) stays until its stdin ends:
 * srun aborts the whole agents' step (killing every other agent before it stops and writes
 * its final node file) when it forwards berth up's stop to a node whose agent has just
 * exited (src/stack/multi-node/agents-step.ts). The agent runs here as srun would start it,
 * on a one-node "allocation" given by the Slurm variables, its stdin a pipe held open.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BERTH, tempStateDir } from './helpers/cli.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('an agent whose job rank failed writes its node file, then exits only once its stdin ends', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-agent-eof-'));
  const stack = join(dir, 'stack.yaml');
  writeFileSync(stack, 'services:\n  trainer:\n    nodes: all\n    job: true\n    command: [sh, -c, "exit 3"]\n');
  const run = join(dir, 'run');
  mkdirSync(join(run, 'nodes'), { recursive: true, mode: 0o700 });
  const env = { ...process.env, SLURM_JOB_ID: '7', SLURM_JOB_NODELIST: 'n1', SLURMD_NODENAME: 'n1', SLURM_NODEID: '0', BERTH_STATE_DIR: tempStateDir(), NO_COLOR: '1' };
  const agent = spawn(process.execPath, [BERTH, 'up', stack, '--agent', run], { env, stdio: ['pipe', 'ignore', 'pipe'] });
  let err = '';
  agent.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((res) => agent.on('exit', (code) => res(code)));
  const nodeFile = () => {
    try {
      return JSON.parse(readFileSync(join(run, 'nodes', 'n1.json'), 'utf8')) as { state: string; exitCode?: number };
    } catch {
      return undefined;
    }
  };
  try {
    const deadline = Date.now() + 30_000;
    while (nodeFile()?.state !== 'failed' && agent.exitCode === null && Date.now() < deadline) await sleep(50);
    assert.deepEqual([nodeFile()?.state, nodeFile()?.exitCode], ['failed', 3], err);
    // Ended, final node file written: still there while srun may forward to it.
    await sleep(700);
    assert.equal(agent.exitCode, null, `the agent exited before its stdin ended\n${err}`);
    agent.stdin.end();
    assert.equal(await exited, 3, err);
    assert.equal(nodeFile()?.state, 'failed');
  } finally {
    agent.kill('SIGKILL');
  }
});
