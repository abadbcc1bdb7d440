/**
 * `berth up` from the command line: stacks refused at load time (exit 65, file:line, nothing
 * started), usage errors, and the demo of examples/demo end to end — the normal run (exit 0,
 * the client's summary on stdout) and the failing engine (exit 70, the engine's stderr in
 * its bundle under the run directory, the message naming the replica).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { berth } from './helpers/cli.js';
import { requireNetns } from './helpers/netns.js';

const STACKS = 'test/fixtures/stacks';

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'berth-up-cli-'));
}

describe('berth up: refused stacks', { concurrency: 4 }, () => {
  const refused = async (file: string, lines: RegExp[]) => {
    const dir = tmp();
    try {
      const r = await berth(['up', file, '--run-dir', join(dir, 'run')], { env: { BERTH_STATE_DIR: join(dir, 'state') } });
      assert.equal(r.code, 65, r.stderr);
      for (const re of lines) assert.match(r.stderr, re);
      assert.equal(existsSync(join(dir, 'run')), false, 'nothing is created for a refused stack');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  test('unknown placeholders and undeclared dependencies', () =>
    refused(`${STACKS}/bad-placeholders.yaml`, [
      /bad-placeholders\.yaml:6: service "proxy": command\[3\] uses unknown placeholder \{prt\}/,
      /bad-placeholders\.yaml:6: service "proxy": command\[1\] uses \{engine\.url\}, but "engine" is not in its depends_on/,
    ]));
  test('dependency cycles', () => refused(`${STACKS}/cycle3.yaml`, [/cycle3\.yaml:\d+: service "a": dependency cycle a → c → b → a/]));
  test('a dependency on a missing service', () => refused(`${STACKS}/bad-deps.yaml`, [/bad-deps\.yaml:10: service "c": depends on "engin", which is not a service of this stack \(did you mean "engine"\?\)/]));
  test('duplicate ports', () => refused(`${STACKS}/bad-ports.yaml`, [/bad-ports\.yaml:7: service "b": port 8000 overlaps port 8000 of service "a" \(line 4\)/]));
  test('a missing file', () => refused('no/such/stack.yaml', [/no\/such\/stack\.yaml: cannot read stack file: no such file/]));

  test('replicas: gpus without any GPU in the environment: exit 65 naming the line, nothing started', async () => {
    const dir = tmp();
    try {
      const file = join(dir, 'gpus.yaml');
      writeFileSync(file, 'services:\n  engine:\n    replicas: gpus\n    command: [srv, "{port}"]\n');
      const noGpu = { SLURM_STEP_GPUS: undefined, SLURM_JOB_GPUS: undefined, CUDA_VISIBLE_DEVICES: undefined, GPU_DEVICE_ORDINAL: undefined };
      const r = await berth(['up', file, '--run-dir', join(dir, 'run')], { env: { BERTH_STATE_DIR: join(dir, 'state'), ...noGpu } });
      assert.equal(r.code, 65, r.stderr);
      assert.match(r.stderr, /gpus\.yaml:2: service "engine": replicas: gpus/);
      assert.equal(existsSync(join(dir, 'run')), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('usage: no stack file, two stack files, an unknown flag', async () => {
    for (const args of [['up'], ['up', 'a.yaml', 'b.yaml'], ['up', 'a.yaml', '--bogus']]) {
      const r = await berth(args);
      assert.equal(r.code, 64, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /berth up --help/);
    }
    const h = await berth(['up', '--help']);
    assert.equal(h.code, 0);
    assert.match(h.stdout, /Usage: berth up STACK/);
  });
});

test('a port that cannot be had: exit 69 naming the service, nothing started', async (t) => {
  if (!requireNetns(t)) return;
  const dir = tmp();
  try {
    const file = join(dir, 'stack.yaml');
    const cmd = `[${JSON.stringify(process.execPath)}, ${JSON.stringify(join(process.cwd(), 'test/fixtures/up/svc.mjs'))}, --port, "{port}"]`;
    // 40000 lies in the namespace's default ephemeral range (32768-60999), which is not reserved.
    writeFileSync(file, `services:\n  ok:\n    range: 20000-20009\n    command: ${cmd}\n  eph:\n    port: 40000\n    command: ${cmd}\n`);
    const run = join(dir, 'run');
    const r = await berth(['up', file, '--run-dir', run], { netns: {}, env: { BERTH_STATE_DIR: join(dir, 'state') } });
    assert.equal(r.code, 69, r.stderr);
    assert.match(r.stderr, /berth: eph\/0 failed: no port: port 40000 is not available: it is inside the ephemeral range/);
    assert.doesNotMatch(r.stderr, /logs: /);
    const evs = readFileSync(join(run, 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    // The stack's ports are one set (all or none): no replica is pending when the set fails.
    assert.deepEqual(evs.map((e) => `${e.service}:${e.state}`), ['eph:failed']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

describe('berth up: the demo', { concurrency: 2 }, () => {
  test('examples/demo/stack.yaml: exit 0, the client\'s summary on stdout', async (t) => {
    if (!requireNetns(t)) return;
    const dir = tmp();
    try {
      const run = join(dir, 'run');
      const r = await berth(['up', 'examples/demo/stack.yaml', '--run-dir', run], { netns: {}, env: { BERTH_STATE_DIR: join(dir, 'state') }, timeoutMs: 60_000 });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^client: 200 requests to http:\/\/127\.0\.0\.1:21000 in [\d.]+ s/m);
      assert.match(r.stdout, /^ {2}engine\/0 +100 requests$/m);
      assert.match(r.stdout, /^ {2}engine\/1 +100 requests$/m);
      assert.match(r.stdout, /^ {2}errors +0$/m);
      assert.match(r.stderr, /stack ready after [\d.]+s: 3 replicas/);
      assert.match(r.stderr, /^ {2}engine\/0 +http:\/\/127\.0\.0\.1:20000 +pid \d+$/m);
      assert.match(r.stderr, /^ {2}engine\/1 +http:\/\/127\.0\.0\.1:20100 +pid \d+$/m);
      assert.match(r.stderr, /^ {2}proxy\/0 +http:\/\/127\.0\.0\.1:21000 +pid \d+$/m);
      assert.match(r.stderr, /berth: job client exited with status 0/);
      assert.match(readFileSync(join(run, 'logs', 'engine-1.out'), 'utf8'), /SIGTERM: shutting down after 100 requests/);
      assert.equal(existsSync(join(run, 'diagnostics')), false, 'a clean run leaves no bundles');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('examples/demo/stack-fail.yaml: exit 70, the engine\'s stderr in its bundle, the message names it', async (t) => {
    if (!requireNetns(t)) return;
    const dir = tmp();
    try {
      const run = join(dir, 'run');
      const r = await berth(['up', 'examples/demo/stack-fail.yaml', '--run-dir', run], { netns: {}, env: { BERTH_STATE_DIR: join(dir, 'state') }, timeoutMs: 60_000 });
      assert.equal(r.code, 70, r.stderr);
      assert.equal(r.stdout, '', 'the client never ran');
      assert.match(r.stderr, /berth: engine\/1 failed: the service exited with status 3 before it was ready/);
      assert.match(r.stderr, /diagnostics: \S+\/diagnostics\/engine-1\/ \(diagnostics\.json, stdout\.log, stderr\.log\)/);
      assert.match(r.stderr, /last lines of engine\/1's stderr:\n(.*\n)*.*error: failed to load model "tiny-demo"/);
      const bundle = join(run, 'diagnostics', 'engine-1');
      assert.match(readFileSync(join(bundle, 'stderr.log'), 'utf8'), /\[engine\/1\] error: failed to load model "tiny-demo": weights file .* is truncated/);
      const diag = JSON.parse(readFileSync(join(bundle, 'diagnostics.json'), 'utf8'));
      assert.equal(diag.exitCode, 70);
      assert.equal(diag.child.exit.code, 3);
      assert.equal(diag.port, 20100);
      const evs = readFileSync(join(run, 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      assert.ok(!evs.some((e) => (e.service === 'proxy' || e.service === 'client') && e.state !== 'pending'), 'proxy and client never start');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
