/**
 * A replica's directory ({dir}) is never reached through a symlink planted in the run
 * directory (issue 32 §12): a `data` folder, or a replica's own `data/<svc>-<n>`, made as a
 * link beforehand is refused (74, naming it) as the other run-directory components are, and
 * nothing is written where the link points.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { box, up } from './fixtures/up/harness.js';

const stack = `
services:
  w:
    range: 20000-20099
    command: [sh, -c, 'echo planted > {dir}/file; exec sleep 30']
    ready: cmd:test -f {dir}/file
    ready_timeout: 10s
`;

for (const which of ['data', 'data/w-0'] as const) {
  test(`a run directory whose ${which} is a symlink: refused with 74, nothing written through it`, async (t) => {
    if (!requireNetns(t)) return;
    const b = box(stack);
    t.after(() => b.cleanup());
    const target = join(b.dir, 'elsewhere');
    mkdirSync(target);
    mkdirSync(b.runDir, { mode: 0o700 });
    if (which === 'data/w-0') mkdirSync(join(b.runDir, 'data'), { mode: 0o700 });
    symlinkSync(target, join(b.runDir, which));
    const r = await up(b).result;
    assert.equal(r.code, 74, r.stderr);
    assert.match(r.stderr, new RegExp(`${join(b.runDir, which).replace(/[/.]/g, '\\$&')} is a symbolic link`), r.stderr);
    assert.deepEqual(readdirSync(target), [], 'nothing written where the link points');
  });
}
