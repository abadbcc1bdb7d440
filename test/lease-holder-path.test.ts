/**
 * The lease holder is the system's coreutils, whatever is first on PATH (issue 32 §6): a
 * `sleep`, `tail` or `timeout` on PATH that rejects its arguments must not leave `berth port`
 * printing a port whose holder is already dead. The holder printed is running, and holds
 * the lease, when berth port exits.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { BERTH } from './helpers/cli.js';
import { requireNetns, runInNetns } from './helpers/netns.js';

test('berth port with a broken sleep/tail/timeout first on PATH: the lease is held by the system coreutils holder', async (t) => {
  if (!requireNetns(t)) return;
  const bin = mkdtempSync(join(tmpdir(), 'berth-fake-coreutils-'));
  t.after(() => rmSync(bin, { recursive: true, force: true }));
  for (const cmd of ['sleep', 'tail', 'timeout']) {
    writeFileSync(join(bin, cmd), `#!/bin/sh\necho "${cmd}: invalid time interval '$1'" >&2\nexit 1\n`);
    chmodSync(join(bin, cmd), 0o755);
  }
  const cases = [
    ['ttl', '--port 20101 --ttl 1m', 20101],
    ['owner', '--port 20102 --owner $O', 20102],
    ['both', '--port 20103 --owner $O --ttl 1m', 20103],
  ] as const;
  const script = [
    '/bin/sleep 60 & O=$!',
    ...cases.map(([k, args, port]) => `P=$("$NODE" "$BERTH" port ${args}); echo "RC_${k}=$? $P"; grep -q '@berth/v1/p/${port}@' /proc/net/unix && echo "HELD_${k}=yes"`),
    'kill $O',
  ].join('\n');
  const env = { ...process.env, NODE: process.execPath, BERTH, NO_COLOR: '1', PATH: `${bin}:${process.env.PATH}` };
  const r = await runInNetns({}, ['sh', '-c', script], { env, timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  for (const [k, , port] of cases) {
    assert.match(r.stdout, new RegExp(`^RC_${k}=0 ${port}$`, 'm'), `${k}\n${r.stdout}${r.stderr}`);
    assert.match(r.stdout, new RegExp(`^HELD_${k}=yes$`, 'm'), `${k}: the port printed is leased when berth port has exited\n${r.stdout}`);
  }
});

test('a lease holder is confirmed waiting before its lease is reported; one that exits at once is an error (69)', async () => {
  const { spawnHolder, endHolder, holderCommand } = await import('../src/allocate/lease-holder.js');
  assert.deepEqual(holderCommand({ ownerPid: 7, ttlMs: 1000 }, (n) => `/sys/${n}`), ['/sys/timeout', ['1.000', '/sys/tail', '--pid=7', '-s', '0.2', '-f', '/dev/null']]);
  const ok = await spawnHolder([], { ttlMs: 60_000 });
  try {
    const stat = readFileSync(`/proc/${ok.pid}/stat`, 'latin1');
    assert.equal(stat[stat.lastIndexOf(')') + 2], 'S', 'sleeping when reported');
    assert.match(readlinkSync(`/proc/${ok.pid}/exe`), /^\/(usr\/)?bin\/sleep$|coreutils/);
  } finally {
    await endHolder(ok);
  }
  // A pid that has just ended: tail --pid exits at once.
  const gone = spawnSync('/bin/sh', ['-c', 'echo $$'], { encoding: 'utf8' });
  const dead = Number(gone.stdout.trim());
  await assert.rejects(spawnHolder([], { ownerPid: dead }), (e: Error & { exitCode?: number }) => {
    assert.equal(e.exitCode, 69);
    assert.match(e.message, new RegExp(`exited at once \\(status \\d+\\): owner pid ${dead} ended before its lease was made; nothing was leased`));
    return true;
  });
});
