/**
 * launch() options a caller such as `berth up` needs: portless services (no port, no
 * ownership phase, same supervision and diagnostics), `substitute: false` (command and
 * ready used as given), and the caller's own log files (written once; a failure bundle gets
 * a copy of this launch's part of them). No port is touched, so no network namespace.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { launch } from '../src/launch/launch.js';
import { parseStatIds } from '../src/launch/process-tree.js';
import type { LaunchEvent, LaunchOptions } from '../src/launch/launch-api.js';

/** Live (non-zombie) processes in process group `pgid`. */
function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue;
    }
    const ids = parseStatIds(stat);
    if (ids && ids.pgrp === pgid && ids.state !== 'Z') out.push(Number(name));
  }
  return out;
}

function tmp(): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'berth-launch-opts-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A portless launch of `sh -c script`, quiet, with its events recorded. */
function sh(script: string, dir: string, extra: Partial<LaunchOptions> = {}) {
  const events: LaunchEvent['type'][] = [];
  const h = launch({
    command: ['/bin/sh', '-c', script],
    portless: true,
    name: 'svc',
    diagDir: join(dir, 'diag'),
    stdout: null,
    stderr: null,
    stopGraceMs: 2_000,
    onEvent: (e) => events.push(e.type),
    ...extra,
  });
  return { h, events };
}

describe('launch options', { concurrency: 4 }, () => {
  test('portless: ready once spawned, its status comes back, a bundle when it dies unasked', async (t) => {
    const b = tmp();
    t.after(() => b.cleanup());
    const { h, events } = sh('echo hello; sleep 0.2; echo bye >&2; exit 3', b.dir);
    const ready = await h.ready;
    assert.equal(ready.port, 0);
    assert.equal(ready.host, '');
    assert.equal(ready.pid, h.pid);
    assert.equal(h.port, undefined);
    const end = await h.exited;
    assert.equal(end.exitCode, 3);
    assert.deepEqual(events, ['spawned', 'ready', 'exited']);
    // Died after ready without being asked: evidence kept, logs complete.
    const d = JSON.parse(readFileSync(end.bundle!, 'utf8'));
    assert.equal(d.phase, 'exited');
    assert.equal(d.port, null);
    assert.equal(d.portless, true);
    assert.equal(readFileSync(join(b.dir, 'diag', 'stdout.log'), 'utf8'), 'hello\n');
    assert.equal(readFileSync(join(b.dir, 'diag', 'stderr.log'), 'utf8'), 'bye\n');
  });

  test('portless: a cmd: probe decides readiness; stop() ends the whole group', async (t) => {
    const b = tmp();
    t.after(() => b.cleanup());
    const flag = join(b.dir, 'flag');
    // A background helper in the same group must go with the service.
    const { h, events } = sh(`sleep 30 & sleep 0.3; touch ${flag}; wait`, b.dir, { ready: `cmd:test -e ${flag}` });
    const t0 = performance.now();
    const ready = await h.ready;
    assert.ok(performance.now() - t0 >= 250, 'not ready before the probe succeeded');
    assert.equal(ready.port, 0);
    assert.deepEqual(events, ['spawned', 'ready']);
    const pid = h.pid!;
    const end = await h.stop();
    assert.equal(end.exitCode, 143);
    assert.deepEqual(groupMembers(pid), [], 'nothing of the group is left');
    assert.equal(end.bundle, undefined, 'asked to stop: no bundle');
  });

  test('portless: what needs a port is refused with 64 before anything starts', async (t) => {
    const b = tmp();
    t.after(() => b.cleanup());
    for (const extra of [{ ready: 'tcp' }, { command: ['/bin/echo', '{port}'] }, { ready: 'cmd:curl -sf http://127.0.0.1:{port}/' }, { source: { kind: 'port' as const, port: 20000 } }, { handoff: 'fd' as const }]) {
      const { h, events } = sh('true', b.dir, extra);
      await assert.rejects(h.ready, (e: Error & { exitCode: number }) => e.exitCode === 64, JSON.stringify(extra));
      assert.equal((await h.exited).exitCode, 64);
      assert.ok(!events.includes('spawned'), JSON.stringify(extra));
    }
  });

  test('portless: dying before its probe succeeds is 70 with a full bundle', async (t) => {
    const b = tmp();
    t.after(() => b.cleanup());
    const { h } = sh('echo starting; echo "fatal: no config" >&2; exit 4', b.dir, { ready: 'cmd:false' });
    await assert.rejects(h.ready, (e: Error & { exitCode: number; phase: string }) => e.exitCode === 70 && e.phase === 'probe' && /exited with status 4 before it was ready/.test(e.message));
    const end = await h.exited;
    assert.equal(end.exitCode, 70);
    assert.equal(end.code, 4);
    assert.equal(readFileSync(join(b.dir, 'diag', 'stderr.log'), 'utf8'), 'fatal: no config\n');
    assert.equal(JSON.parse(readFileSync(end.bundle!, 'utf8')).child.exit.code, 4);
  });

  test('substitute: false passes {port}, {host}, {name} through literally', async (t) => {
    const b = tmp();
    t.after(() => b.cleanup());
    const out = join(b.dir, 'out.log');
    const { h } = sh('', b.dir, { command: ['/bin/sh', '-c', 'echo "$0 $1 $2"; sleep 0.3', '{port}', '{host}', '{name}'], substitute: false, stdoutLog: out, ready: 'cmd:test "{name}" = "{""name}"' });
    await h.ready;
    assert.equal((await h.exited).exitCode, 0);
    assert.equal(readFileSync(out, 'utf8'), '{port} {host} {name}\n');
  });

  test("the caller's log files are the logs; a bundle copies this launch's part of them", async (t) => {
    const b = tmp();
    t.after(() => b.cleanup());
    const out = join(b.dir, 'svc.out');
    const err = join(b.dir, 'svc.err');
    writeFileSync(out, 'earlier attempt\n'); // a stack appends a replica's attempts to one file
    const diag = join(b.dir, 'diag');
    const { h } = sh('echo one; echo two >&2; sleep 0.3; echo three; exit 9', b.dir, { stdoutLog: out, stderrLog: err, ready: 'cmd:false' });
    // While it runs, nothing is written twice: the run folder holds no log of its own.
    await new Promise((r) => setTimeout(r, 150));
    assert.deepEqual(readdirSync(diag), []);
    assert.equal(readFileSync(out, 'utf8'), 'earlier attempt\none\n');
    const end = await h.exited;
    assert.equal(end.exitCode, 70);
    assert.equal(readFileSync(out, 'utf8'), 'earlier attempt\none\nthree\n');
    assert.equal(readFileSync(err, 'utf8'), 'two\n');
    // The bundle is complete on its own: this launch's output only, to the last byte.
    assert.equal(readFileSync(join(diag, 'stdout.log'), 'utf8'), 'one\nthree\n');
    assert.equal(readFileSync(join(diag, 'stderr.log'), 'utf8'), 'two\n');
    const d = JSON.parse(readFileSync(end.bundle!, 'utf8'));
    assert.deepEqual(d.logs.stdout, { file: 'stdout.log', bytes: 10, log: out, offset: 16 });
    assert.deepEqual(d.logs.stderr, { file: 'stderr.log', bytes: 4, log: err, offset: 0 });
  });

  test("caller's logs with the default run folder: a clean run leaves only the caller's files", async (t) => {
    const b = tmp();
    t.after(() => b.cleanup());
    const out = join(b.dir, 'svc.out');
    const state = join(b.dir, 'state');
    const h = launch({ command: ['/bin/echo', 'hi'], portless: true, stdoutLog: out, stderrLog: join(b.dir, 'svc.err'), stdout: null, stderr: null, stateDir: state });
    const end = await h.exited;
    assert.equal(end.exitCode, 0);
    assert.equal(end.runDir, undefined);
    assert.equal(readFileSync(out, 'utf8'), 'hi\n');
    assert.deepEqual(readdirSync(join(state, 'runs')), []);
    // An unwritable log is an I/O error (74) naming the file.
    const bad = launch({ command: ['/bin/true'], portless: true, stdoutLog: join(b.dir, 'missing', 'x.out'), stdout: null, stderr: null, stateDir: state });
    await assert.rejects(bad.ready, (e: Error & { exitCode: number }) => e.exitCode === 74 && e.message.includes(join(b.dir, 'missing', 'x.out')));
    assert.ok(!existsSync(join(b.dir, 'missing')));
  });
});
