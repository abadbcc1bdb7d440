/**
 * Inputs that cannot work are usage errors (64) before anything is leased (issue 32 §11):
 * a command whose arguments grow past what execve takes once berth fills in its
 * placeholders ({name} with a long --name), and empty values of the path flags
 * (--run-dir, --diag-dir, --ready-file, --html), which before meant the current directory,
 * a crash (70) or an I/O error (74).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { BERTH, berth } from './helpers/cli.js';
import { requireNetns, runInNetns } from './helpers/netns.js';

test('berth run: an argument too long for execve once {name} is filled in is 64, no stack trace, nothing started', async (t) => {
  if (!requireNetns(t)) return;
  const name = 'n'.repeat(60);
  const r = await berth(['run', '--range', '20000-20010', '--name', name, '--', 'echo', '{name}'.repeat(20_000)], { netns: {} });
  assert.equal(r.code, 64, r.stderr);
  assert.match(r.stderr, /cannot start echo: its argument 1 is \d+ KiB once berth fills in its placeholders; Linux allows at most 128 KiB per argument/);
  assert.doesNotMatch(r.stderr, /\n\s+at |internal error|diagnostics:/, r.stderr);
  // The same through the total: many arguments that only together are too much.
  const r2 = await berth(['run', '--range', '20000-20010', '--name', name, '--', 'echo', ...Array<string>(30).fill('{name}'.repeat(2_000))], { netns: {} });
  assert.equal(r2.code, 64, r2.stderr);
  assert.match(r2.stderr, /its arguments and environment take \d+ KiB once berth fills in its placeholders; Linux allows/);
});

test('berth up: a command word too long for execve in the stack file is 64 naming file:line, before anything is leased or made, no stack trace', async (t) => {
  if (!requireNetns(t)) return;
  const dir = mkdtempSync(join(tmpdir(), 'berth-too-long-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const stack = join(dir, 'stack.yaml');
  // b comes first in the file and is fine: nothing of it may start or be leased either.
  writeFileSync(stack, `services:\n  b:\n    range: 20100-20199\n    command: [sleep, "5"]\n  big:\n    range: 20000-20099\n    command: [echo, "${'x'.repeat(200_000)}"]\n`);
  const run = join(dir, 'run');
  const r = await berth(['up', stack, '--run-dir', run], { netns: {} });
  assert.equal(r.code, 64, r.stderr);
  assert.match(r.stderr, new RegExp(`${stack.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:5: service "big": cannot start echo: its argument 1 is 196 KiB; Linux allows at most 128 KiB per argument`));
  assert.doesNotMatch(r.stderr, /\n\s+at |internal error|pending|starting/, r.stderr);
  assert.deepEqual(readdirSync(dir), ['stack.yaml'], 'no run directory was made');
  // Many words that only together are too much (here under ulimit -s 1024: 256 KiB in all): the total, also 64.
  writeFileSync(stack, `services:\n  many:\n    range: 20000-20099\n    command: [echo${`, "${'y'.repeat(10_000)}"`.repeat(30)}]\n`);
  const r2 = await runInNetns({}, ['sh', '-c', 'ulimit -s 1024 && exec "$@"', 'sh', process.execPath, BERTH, 'up', stack, '--run-dir', run]);
  assert.equal(r2.code, 64, r2.stderr);
  assert.match(r2.stderr, /:2: service "many": cannot start echo: its arguments and environment take \d+ KiB; Linux allows 256 KiB in all/);
  assert.doesNotMatch(r2.stderr, /\n\s+at |internal error|pending/, r2.stderr);
  assert.deepEqual(readdirSync(dir), ['stack.yaml'], 'no run directory was made');
});

test('empty --run-dir, --diag-dir, --ready-file and --html are 64, and nothing is written to the current directory', async (t) => {
  if (!requireNetns(t)) return;
  const cwd = mkdtempSync(join(tmpdir(), 'berth-empty-flags-'));
  t.after(() => rmSync(cwd, { recursive: true, force: true }));
  const stack = join(cwd, 'stack.yaml');
  writeFileSync(stack, 'services:\n  a:\n    range: 20000-20099\n    command: [sleep, "1"]\n    ready: tcp\n');
  const runs: [string, string][] = [
    ['--ready-file', `run --range 20000-20010 --ready-file '' -- sleep 0.1`],
    ['--diag-dir', `run --range 20000-20010 --diag-dir '' -- sh -c 'exit 3'`],
    ['--run-dir', `up stack.yaml --run-dir ''`],
    ['--html', `inspect --html ''`],
    ['--html', `doctor --html ''`],
  ];
  const script = ['cd "$DIR"', ...runs.map(([, args], i) => `"$NODE" "$BERTH" ${args} >/dev/null 2>/tmp/empty-$$; echo "RC_${i}=$? $(head -c 400 /tmp/empty-$$ | tr '\\n' ' ')"`), 'rm -f /tmp/empty-$$'].join('\n');
  const r = await runInNetns({}, ['sh', '-c', script], { env: { ...process.env, NODE: process.execPath, BERTH, DIR: cwd, NO_COLOR: '1' } });
  assert.equal(r.code, 0, r.stderr);
  runs.forEach(([flag, args], i) => {
    const line = new RegExp(`^RC_${i}=(\\d+) (.*)$`, 'm').exec(r.stdout);
    assert.ok(line, r.stdout);
    assert.equal(line[1], '64', `${args}: ${line[2]}`);
    assert.match(line[2]!, new RegExp(`${flag} is empty`), args);
  });
  assert.deepEqual(readdirSync(cwd), ['stack.yaml'], 'nothing written where berth was started');
});
