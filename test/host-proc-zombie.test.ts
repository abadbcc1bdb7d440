/** A zombie (dead, not yet reaped) is not alive: a lease of a killed allocator is stale at once. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { processStartTime } from '../src/host/proc-stat.js';

test('processStartTime: a live process has a start time, a zombie has none', async (t) => {
  // The parent forks a child that exits at once and is never reaped while the parent sleeps.
  const parent = spawn('/usr/bin/python3', ['-c', 'import os,sys,time\npid=os.fork()\nif pid==0: os._exit(0)\nprint(pid,flush=True)\ntime.sleep(30)'], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => parent.kill('SIGKILL'));
  const [chunk] = (await once(parent.stdout, 'data')) as [Buffer];
  const zombie = Number(chunk.toString().trim());
  assert.ok(processStartTime(parent.pid!) !== undefined, 'the sleeping parent is alive');
  for (let i = 0; i < 100 && processStartTime(zombie) !== undefined; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(processStartTime(zombie), undefined, `pid ${zombie} is a zombie and counts as dead`);
});
