/**
 * Issue 22 §12: a NUL byte in a command word or an environment value (a stack file's "\0"
 * escape, a library caller's string) is refused where it enters berth, naming the field: 65
 * for a stack file, 64 for launch(), never "internal error: TypeError [ERR_INVALID_ARG_VALUE]".
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BerthError, EXIT } from '../src/errors.js';
import { launch } from '../src/launch/index.js';
import { parseStack } from '../src/stack/file/load.js';
import { berth, tempStateDir } from './helpers/cli.js';

const dir = () => mkdtempSync(join(tmpdir(), 'berth-nul-'));

test('a stack file with "\\0" in a command word, an env value or a ready probe is refused at load (65), naming each field', () => {
  const text = [
    'services:',
    '  a:',
    '    command: ["sleep", "1\\0x"]',
    '    env:',
    '      FOO: "a\\0b"',
    '    ready: "cmd:true\\0"',
    '  b:',
    '    command: [sleep, "1"]',
    '',
  ].join('\n');
  try {
    parseStack(text, 's.yaml', dir());
    assert.fail('loaded');
  } catch (e) {
    assert.ok(e instanceof BerthError, String(e));
    assert.equal(e.exitCode, EXIT.DATAERR);
    const errors = e.details?.errors as string[];
    assert.deepEqual(errors, [
      's.yaml:2: services.a.command word 2 contains a NUL byte (\\0) at character 2; a program\'s arguments and environment cannot hold one: remove it',
      's.yaml:2: services.a.env.FOO contains a NUL byte (\\0) at character 2; a program\'s arguments and environment cannot hold one: remove it',
      's.yaml:2: services.a.ready contains a NUL byte (\\0) at character 5; a program\'s arguments and environment cannot hold one: remove it',
    ]);
  }
});

test('berth up with a NUL in an env value exits 65 naming the field, and starts nothing', async () => {
  const d = dir();
  const file = join(d, 'stack.yaml');
  writeFileSync(file, 'services:\n  a:\n    command: ["sleep", "30"]\n    env:\n      FOO: "a\\0b"\n');
  const r = await berth(['up', file, '--run-dir', join(d, 'run')], { env: { BERTH_STATE_DIR: tempStateDir() } });
  assert.equal(r.code, 65, r.stderr);
  assert.match(r.stderr, /stack\.yaml:2: services\.a\.env\.FOO contains a NUL byte/);
  assert.doesNotMatch(r.stderr, /internal error|ERR_INVALID_ARG_VALUE|\n\s+at /);
});

test('launch() with a NUL in a command word or an env value fails with a usage error (64) naming it, before any port', async () => {
  for (const [what, opts, field] of [
    ['argument', { command: ['sleep', '1\0x'] }, /command word 2 contains a NUL byte/],
    ['env value', { command: ['sleep', '1'], env: { ...process.env, FOO: 'a\0b' } }, /environment variable FOO contains a NUL byte/],
  ] as const) {
    const h = launch({ ...opts, stateDir: tempStateDir(), diagDir: join(dir(), 'diag'), stdout: null, stderr: null });
    const ready = h.ready.then(() => undefined, (e: unknown) => e);
    const end = await h.exited;
    const e = (end.error ?? (await ready)) as BerthError | undefined;
    assert.ok(e, `${what}: an error`);
    assert.equal(e.exitCode, EXIT.USAGE, `${what}: ${e.message}`);
    assert.match(e.message, field);
    assert.equal(end.ready, false);
  }
});
