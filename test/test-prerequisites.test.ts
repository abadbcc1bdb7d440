/**
 * Issue 21 §1: the test suite's own prerequisite check (test/helpers/require.ts). A program
 * missing from PATH or a Python module Debian's python3 cannot import is reported with its
 * Debian package, so `npm test` on a machine without the servers skips those tests loudly.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findProgram, missingNeeds, missingText, NEED } from './helpers/require.js';

test('a program is found on PATH only; a module only when python3 imports it', () => {
  assert.ok(findProgram('sh'), 'sh is on PATH');
  assert.equal(findProgram('sh', { PATH: '/nonexistent' }), undefined);
  assert.deepEqual(missingNeeds([NEED.nginx, NEED.curl], { PATH: '/nonexistent' }), [NEED.nginx, NEED.curl]);
  // A PYTHONPATH stub that fails its import hides an installed module, as on a machine without it.
  const stubs = mkdtempSync(join(tmpdir(), 'berth-pystub-'));
  writeFileSync(join(stubs, 'json.py'), "raise ImportError('hidden')\n");
  const json = { python: 'json', pkg: 'python3' } as const;
  assert.deepEqual(missingNeeds([json], { ...process.env }), []);
  assert.deepEqual(missingNeeds([json], { ...process.env, PYTHONPATH: stubs }), [json]);
});

test('the skip line names what is missing and the apt-get command', () => {
  assert.equal(
    missingText([NEED.gunicorn, NEED.redisServer, NEED.redisCli]),
    'needs the Python module gunicorn (not importable by /usr/bin/python3), redis-server (not on PATH), redis-cli (not on PATH): apt-get install gunicorn redis-server redis-tools',
  );
});
