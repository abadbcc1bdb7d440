/**
 * The proof that a job's old generation is gone (src/stack/run/generation-gone.ts), on real
 * sockets and processes: a port still held by another process is named with its pid and
 * command; berth's own hold on a port is not a leftover; a SIGKILL survivor is named.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { test } from 'node:test';
import { portsStillHeld, survivorText, type Survivor } from '../src/stack/run/generation-gone.js';

test('a port held by a process outside berth is named (pid, command); berth\'s own socket is not', { timeout: 30_000 }, async (t) => {
  const child = spawn('/usr/bin/python3', ['-c', 'import socket,sys,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)'], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => child.kill('SIGKILL'));
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  const theirs = Number(line.toString().trim());
  const own = createServer();
  own.listen(0, '127.0.0.1');
  await once(own, 'listening');
  t.after(() => own.close());
  const mine = (own.address() as { port: number }).port;
  assert.deepEqual(await portsStillHeld('/proc', [mine]), [], 'berth\'s own listener is no leftover');
  const held = await portsStillHeld('/proc', [theirs, mine]);
  assert.equal(held.length, 1, JSON.stringify(held));
  assert.equal(held[0]!.row.localPort, theirs);
  assert.match(held[0]!.holder, new RegExp(`^pid ${child.pid} \\(/usr/bin/python3 -c import socket`));
});

test('a process that survived SIGKILL in state D is named with why', () => {
  const s = { pid: 4242, state: 'D', command: 'python3 train.py', rep: { label: 'trainer/1' } } as unknown as Survivor;
  assert.equal(survivorText(s), 'process 4242 (python3 train.py) of trainer/1 survived SIGKILL (state D: in uninterruptible sleep, stuck in the kernel (a hung disk or network filesystem); only its I/O returning, or a reboot, ends it)');
});
