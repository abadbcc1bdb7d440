/**
 * Issue 9 §5, inputs that hang or lie: devices, FIFOs and huge files as layouts or stacks,
 * directories berth cannot create on /proc, durations past Node's timer limit, a host with
 * no default band, and the smaller lies (cwd, E2BIG, empty services, duplicate env keys,
 * bad addresses, unrounded timeouts, TERM=dumb, exit codes, the doctor header).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT, type BerthError } from '../src/errors.js';
import { launch } from '../src/launch/launch.js';
import { argMax, execBytes, preflight } from '../src/launch/preflight.js';
import { probeCmd } from '../src/launch/probes.js';
import { bandSizeText } from '../src/report/format.js';
import { StatusView } from '../src/stack/record/status-view.js';
import { StackConsole } from '../src/stack/record/stack-console.js';
import { MAX_TIMER_MS, timerProblem, DEADLINE, GRACE } from '../src/util/duration.js';
import { readInputFile, InputFileError } from '../src/util/safe-file.js';
import { listenAddressProblem } from '../src/util/address.js';
import { berth, tempStateDir } from './helpers/cli.js';
import { requireNetns } from './helpers/netns.js';

const noStack = (s: string) => assert.doesNotMatch(s, /\n\s+at .+:\d+:\d+|internal error/, 'a user error must not print a stack trace');
const fresh = () => mkdtempSync(join(tmpdir(), 'berth-inputs-'));
const env = () => ({ BERTH_STATE_DIR: tempStateDir() });

function stackFile(text: string): string {
  const f = join(fresh(), 'stack.yaml');
  writeFileSync(f, text);
  return f;
}

test('a device, a FIFO or a file over 1 MiB as layout or stack: exit 65 at once, nothing read into memory', async () => {
  const dir = fresh();
  const fifo = join(dir, 'fifo.yaml');
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
  const big = join(dir, 'big.yaml');
  writeFileSync(big, `# ${'x'.repeat(1 << 20)}\nbands: {}\n`);
  const cases: [string[], RegExp][] = [
    [['port', '--layout', '/dev/zero', '--band', 'x'], /\/dev\/zero: cannot read layout file: it is a character device, not a regular file/],
    [['doctor', '--layout', fifo], /fifo\.yaml: cannot read layout file: it is a FIFO \(named pipe\), not a regular file/],
    [['up', fifo], /fifo\.yaml: cannot read stack file: it is a FIFO/],
    [['doctor', '--layout', big], /big\.yaml: cannot read layout file: it is 1\.0 MiB; berth reads at most 1\.0 MiB/],
    [['up', stackFile('layout: /dev/zero\nservices:\n  a: { command: ["true"] }\n')], /layout "\/dev\/zero": cannot read .*character device/],
  ];
  for (const [args, want] of cases) {
    const r = await berth(args, { env: env(), timeoutMs: 15_000 });
    assert.equal(r.code, EXIT.DATAERR, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, want);
    noStack(r.stderr);
  }
});

test('readInputFile: bounded even for files that report no size', () => {
  assert.throws(() => readInputFile('/dev/zero'), InputFileError);
  assert.match(readInputFile('/proc/self/status'), /^Name:/);
  assert.throws(() => readInputFile('/proc/self/status', 10), (e: Error) => e instanceof InputFileError && /more than/.test(e.message));
});

test('--run-dir, --diag-dir and BERTH_STATE_DIR under /proc: exit 74 naming the directory, no spinning', async () => {
  const stack = stackFile('services:\n  a:\n    command: ["true"]\n    port: none\n    job: true\n');
  const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
    [['up', stack, '--run-dir', '/proc/berth-x/run'], env(), /run directory \/proc\/berth-x\/run cannot be created \(ENOENT\)/],
    [['run', '--diag-dir', '/proc/berth-x', '--', 'true'], env(), /--diag-dir \/proc\/berth-x cannot be created \(ENOENT\)/],
    [['run', '--', 'true'], { BERTH_STATE_DIR: '/proc/berth-bs' }, /\/proc\/berth-bs cannot be created \(ENOENT\)/],
  ];
  for (const [args, e, want] of cases) {
    const r = await berth(args, { env: e, timeoutMs: 15_000 });
    assert.equal(r.signal, null, `${args.join(' ')} hung`);
    assert.equal(r.code, EXIT.IOERR, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, want);
    noStack(r.stderr);
  }
  // BERTH_STATE_DIR is where run folders go, never the leases (issue 22 item 4): berth port does not use it.
  const port = await berth(['port', '--range', '20000-20010', '--owner', '1'], { env: { BERTH_STATE_DIR: '/proc/berth-bs' }, netns: {}, timeoutMs: 15_000 });
  assert.equal(port.code, 0, port.stderr);
});

test('durations past Node\'s timer limit are refused with the limit: 64 on the command line, 65 in a stack; 0 is no ready timeout anywhere', async () => {
  for (const [flag, value, want] of [
    ['--ready-timeout', '600h', /--ready-timeout 600h is longer than berth can time: at most 596h/],
    ['--stop-grace', '600h', /--stop-grace 600h is longer than berth can time: at most 596h/],
    ['--ready-timeout', '0', /--ready-timeout 0 must be more than 0/],
  ] as const) {
    const r = await berth(['run', flag, value, '--', 'true'], { env: env() });
    assert.equal(r.code, EXIT.USAGE, r.stderr);
    assert.match(r.stderr, want);
  }
  const s = stackFile('services:\n  a:\n    command: ["true"]\n    ready_timeout: 99999999999999h\n    stop_grace: 600h\n  b:\n    command: ["true"]\n    ready_timeout: 0s\n');
  const r = await berth(['up', s], { env: env() });
  assert.equal(r.code, EXIT.DATAERR, r.stderr);
  assert.match(r.stderr, /:4: service "a": ready_timeout 99999999999999h is longer than berth can time: at most 596h/);
  assert.match(r.stderr, /:5: service "a": stop_grace 600h is longer than berth can time/);
  assert.match(r.stderr, /:8: service "b": ready_timeout must be more than 0/);
  assert.equal(timerProblem(MAX_TIMER_MS, DEADLINE), undefined);
  assert.match(timerProblem(MAX_TIMER_MS + 1, DEADLINE)!, /at most 596h/);
  assert.equal(timerProblem(0, GRACE), undefined);
  assert.match(timerProblem(Infinity, GRACE)!, /longer/);
});

test('the library refuses the same durations before anything starts (64)', async () => {
  const h = launch({ command: ['true'], portless: true, readyTimeoutMs: 600 * 3_600_000, stateDir: tempStateDir() });
  await assert.rejects(h.ready, (e: BerthError) => e.exitCode === EXIT.USAGE && /ready timeout .* is longer than berth can time/.test(e.message));
  assert.equal((await h.exited).exitCode, EXIT.USAGE);
});

test('no default band (ip_local_port_range="1024 65535"): port, run and up all exit 69 with the ranges and the sysctl fix', async (t) => {
  if (!requireNetns(t)) return;
  const netns = { ephemeral: '1024 65535' };
  const stack = stackFile('services:\n  web:\n    command: [sleep, "5"]\n');
  for (const args of [['port'], ['run', '--', 'true'], ['up', stack, '--run-dir', join(fresh(), 'run')]]) {
    const r = await berth(args, { env: env(), netns });
    assert.equal(r.code, EXIT.UNAVAILABLE, `${args[0]}: ${r.stderr}`);
    assert.match(r.stderr, /no built-in "default" band: every port from 1024 to 65535 lies in the ephemeral range 1024-65535 \(net\.ipv4\.ip_local_port_range/);
    assert.match(r.stderr, /sysctl -w net\.ipv4\.ip_local_port_range="32768 65535"/);
    noStack(r.stderr);
  }
});

test('stack inputs: services {}, a duplicate env key, a bad host, a cwd that is a file or missing: 65 with file:line', async () => {
  const empty = await berth(['up', stackFile('services: {}\n')], { env: env() });
  assert.equal(empty.code, EXIT.DATAERR, empty.stderr);
  assert.match(empty.stderr, /:1: "services" is empty/);
  const dir = fresh();
  writeFileSync(join(dir, 'afile'), '');
  const f = join(dir, 'stack.yaml');
  writeFileSync(f, [
    'services:',
    '  a:',
    '    command: ["true"]',
    '    host: 999.1.1.1',
    '    env:',
    '      X: one',
    '      X: two',
    '',
  ].join('\n'));
  const bad = await berth(['up', f], { env: env() });
  assert.equal(bad.code, EXIT.DATAERR, bad.stderr);
  assert.match(bad.stderr, /:4: service "a": host "999\.1\.1\.1" is not an IPv4 address/);
  assert.match(bad.stderr, /:7: service "a": env X is given twice \(first at line 6\)/);
  writeFileSync(f, 'services:\n  a:\n    command: ["true"]\n    cwd: ./afile\n    job: true\n  b:\n    command: ["true"]\n    cwd: ./nope\n');
  const cwd = await berth(['up', f], { env: env() });
  assert.equal(cwd.code, EXIT.DATAERR, cwd.stderr);
  assert.match(cwd.stderr, /:2: service "a": cwd .*afile is not a directory/);
  assert.match(cwd.stderr, /:6: service "b": cwd .*nope cannot be used: no such file/);
  noStack(cwd.stderr);
});

test('run: --bind 999.1.1.1, -- /tmp and -- /etc/passwd are a clear 64 before anything is leased', async () => {
  const e = env();
  for (const [args, want] of [
    [['--bind', '999.1.1.1'], /--bind "999\.1\.1\.1" is not an IPv4 address/],
    [['--bind', 'myhost'], /is not an IP address; berth does not resolve names/],
  ] as const) {
    const r = await berth(['run', ...args, '--', 'true'], { env: e });
    assert.equal(r.code, EXIT.USAGE, r.stderr);
    assert.match(r.stderr, want);
  }
  const dirCmd = await berth(['run', '--', '/tmp'], { env: e });
  assert.equal(dirCmd.code, EXIT.USAGE, dirCmd.stderr);
  assert.match(dirCmd.stderr, /not an executable: \/tmp is a directory/);
  const plain = await berth(['run', '--', '/etc/passwd'], { env: e });
  assert.equal(plain.code, EXIT.USAGE, plain.stderr);
  assert.match(plain.stderr, /not an executable: \/etc\/passwd has no execute permission/);
  assert.deepEqual(readdirSync(e.BERTH_STATE_DIR), [], 'refused before anything was made (a run folder, a lease)');
  assert.equal(listenAddressProblem('[::1]'), undefined);
  assert.equal(listenAddressProblem('0.0.0.0'), undefined);
});

test('launch preflight: cwd a file or missing, an argument over 128 KiB, argv+env over ARG_MAX: 64, not "internal error: spawn …"', async () => {
  const dir = fresh();
  writeFileSync(join(dir, 'afile'), '');
  const cases: [Parameters<typeof launch>[0], RegExp][] = [
    [{ command: ['true'], portless: true, cwd: join(dir, 'afile') }, /working directory .*afile is a regular file, not a directory/],
    [{ command: ['./run.sh'], portless: true, cwd: join(dir, 'nope') }, /working directory .*nope does not exist/],
    [{ command: ['true', 'x'.repeat(200_000)], portless: true }, /its argument 1 is 196 KiB; Linux allows at most 128 KiB per argument/],
    [{ command: ['true', ...Array.from({ length: 30 }, () => 'y'.repeat(100_000))], portless: true }, /its arguments and environment take \d+ KiB; Linux allows \d+ KiB in all/],
  ];
  for (const [o, want] of cases) {
    const h = launch({ ...o, stateDir: tempStateDir(), stdout: null, stderr: null });
    await assert.rejects(h.ready, (e: BerthError) => {
      assert.equal(e.exitCode, EXIT.USAGE, e.message);
      assert.match(e.message, want);
      return true;
    });
    await h.exited;
  }
  assert.equal(argMax('Max stack size            8388608              unlimited            bytes\n'), 2 << 20);
  assert.equal(argMax('Max stack size            unlimited            unlimited            bytes\n'), 6 << 20);
  assert.equal(execBytes(['ab'], { K: 'v' }).total, 3 + 8 + 4 + 8);
  assert.doesNotThrow(() => preflight({ command: ['true'], portless: true }));
});

test('probe timeouts are reported rounded ("timed out after 123ms", "2.97s")', async () => {
  const r = await probeCmd('sleep 5', process.env, undefined, 123.4567);
  assert.match(r.detail, /^timed out after 123ms/);
});

test('TERM=dumb gets plain lines, no cursor movement', () => {
  const written: string[] = [];
  const out = { isTTY: true, columns: 80, write: (t: string) => written.push(t) };
  const v = new StatusView(out, { env: { TERM: 'dumb' }, refreshMs: 0 });
  assert.equal(v.live, false);
  v.update({ t: new Date().toISOString(), service: 'a', replica: 0, state: 'starting' });
  v.close();
  assert.ok(written.every((t) => !t.includes('\x1b[')), JSON.stringify(written));
  const c = new StackConsole({ stdout: null, stderr: out as unknown as NodeJS.WritableStream, status: 'auto', env: { TERM: 'dumb' } });
  assert.equal(c.live, false);
  c.close();
  assert.equal(new StatusView(out, { env: { TERM: 'xterm' }, refreshMs: 0 }).live, true);
});

test('doctor header counts whole windows as the findings do: window 30 in 100 ports = 3 instances', async () => {
  assert.equal(bandSizeText({ name: 'w', lo: 20000, hi: 20099, window: 30 }), '100 ports, window 30 = 3 instances + 10 spare ports');
  assert.equal(bandSizeText({ name: 'w', lo: 20000, hi: 20099, window: 25 }), '100 ports, window 25 = 4 instances');
  const dir = fresh();
  mkdirSync(join(dir, 'l'));
  const layout = join(dir, 'l', 'w.yaml');
  writeFileSync(layout, 'bands:\n  w: { range: 20000-20099, window: 30 }\n');
  const r = await berth(['doctor', '--layout', layout]);
  assert.match(r.stdout, /window 30 = 3 instances/);
  assert.match(r.stdout, /window 30 fits 3 instances/);
  assert.doesNotMatch(r.stdout, /4 instances/);
});
