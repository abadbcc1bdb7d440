/**
 * Issue 22 §18: exit 69 means "no usable port"; what is not about ports is not 69. A count
 * beyond the number of TCP ports is a usage error (64), and a multi-node stack started where
 * Slurm's srun or scontrol is not on PATH says exactly that (64), not "spawn scontrol ENOENT".
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onPath } from '../src/slurm/programs.js';
import { BERTH, tempStateDir } from './helpers/cli.js';
import { runCollect } from './helpers/netns.js';

const noStack = (s: string) => assert.doesNotMatch(s, /\n\s+at .+:\d+:\d+|internal error|ENOENT/);

test('a count or block beyond the 65535 TCP ports is a usage error (64), not "no usable port" (69)', async () => {
  const env = { ...process.env, BERTH_STATE_DIR: tempStateDir() };
  for (const args of [['--count', '99999999999999999999'], ['--count', '65536'], ['--block', '99999999999999999999'], ['--owner', '99999999999999999999'], ['--owner', '4194305']]) {
    const r = await runCollect([process.execPath, BERTH, 'port', ...args], { env });
    assert.equal(r.code, 64, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`${args[0]} ${args[1]}: at most`));
  }
});

/** A bin directory with node and sh only, plus the given fake programs. */
function binWith(fakes: string[]): string {
  const bin = join(mkdtempSync(join(tmpdir(), 'berth-bin-')), 'bin');
  mkdirSync(bin);
  symlinkSync(process.execPath, join(bin, 'node'));
  symlinkSync('/bin/sh', join(bin, 'sh'));
  for (const f of fakes) {
    writeFileSync(join(bin, f), '#!/bin/sh\necho "fake $0 must not run" >&2\nexit 99\n');
    chmodSync(join(bin, f), 0o755);
  }
  return bin;
}

async function upMultiNode(nodelist: string, bin: string) {
  const dir = mkdtempSync(join(tmpdir(), 'berth-mn-'));
  const stack = join(dir, 'stack.yaml');
  writeFileSync(stack, 'services:\n  t:\n    nodes: all\n    job: true\n    command: [sh, -c, "exit 0"]\n');
  const first = nodelist.split(',')[0]!;
  const env = { PATH: bin, HOME: dir, NO_COLOR: '1', BERTH_STATE_DIR: tempStateDir(), SLURM_JOB_ID: '7', SLURM_JOB_NODELIST: nodelist, SLURMD_NODENAME: first, SLURM_NODEID: '0', SLURM_JOB_NUM_NODES: String(nodelist.split(',').length) };
  return runCollect([process.execPath, BERTH, 'up', stack, '--run-dir', join(dir, 'run')], { env, timeoutMs: 60_000 });
}

test('a multi-node stack without srun on PATH: "Slurm\'s srun is not on PATH" (64)', async () => {
  const r = await upMultiNode('127.0.0.1,127.0.0.2', binWith(['scontrol']));
  assert.equal(r.code, 64, r.stderr);
  assert.match(r.stderr, /Slurm's srun is not on PATH \(berth needs it to start one agent per node\)/);
  noStack(r.stderr);
});

test('a multi-node stack whose node names do not resolve, without scontrol on PATH: "Slurm\'s scontrol is not on PATH" (64)', async () => {
  const r = await upMultiNode('berth-no-such-node-1.invalid,berth-no-such-node-2.invalid', binWith(['srun']));
  assert.equal(r.code, 64, r.stderr);
  assert.match(r.stderr, /Slurm's scontrol is not on PATH \(berth needs it to look up the address of/);
  assert.doesNotMatch(r.stderr, /fake .* must not run/);
  noStack(r.stderr);
});

test('onPath finds executables only', () => {
  const bin = binWith(['srun']);
  writeFileSync(join(bin, 'plain'), 'x');
  assert.equal(onPath('srun', { PATH: bin }), true);
  assert.equal(onPath('plain', { PATH: bin }), false);
  assert.equal(onPath('scontrol', { PATH: bin }), false);
  assert.equal(onPath('srun', {}), false);
});
