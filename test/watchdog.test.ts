/**
 * The watchdog's side (src/launch/watchdog/watch.ts) on real processes: what berth tells it
 * over the pipe, and what it does when the pipe ends without the launches having ended —
 * SIGTERM to the tree at once (group, double-forked daemons by their marker), SIGKILL after
 * the grace — and how it marks a stack's endpoints.json afterwards (src/stack/record/run-gone.ts).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { parseStatIds } from '../src/launch/process-tree.js';
import { watch } from '../src/launch/watchdog/watch.js';
import { formatMessage, parseIpc, parseMessage, type IpcMessage, type WatchMessage } from '../src/launch/watchdog/protocol.js';
import { markRunGone } from '../src/stack/record/run-gone.js';
import { pidsWithEnv, waitGone } from './helpers/procs.js';

function startTicks(pid: number): number {
  return parseStatIds(readFileSync(`/proc/${pid}/stat`, 'latin1'))!.start;
}

/** A shell tree in its own session: the root, a child in its group, and a setsid'd daemon that left it. */
function spawnTree(marker: string, script: string) {
  const [name, value] = marker.split('=') as [string, string];
  return spawn('sh', ['-c', script], { detached: true, stdio: 'ignore', env: { ...process.env, [name]: value } });
}

const waitFor = async (what: () => boolean, ms = 5_000) => {
  const t0 = Date.now();
  while (!what()) {
    if (Date.now() - t0 > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
};

test('protocol: messages round-trip; malformed lines are ignored, not fatal', () => {
  const msgs: WatchMessage[] = [
    { op: 'run', id: 'a', marker: 'BERTH_RUN_ID=x', graceMs: 10 },
    { op: 'pid', id: 'a', pid: 12, start: 34 },
    { op: 'member', id: 'a', pid: 13, start: 35 },
    { op: 'end', id: 'a' },
    { op: 'runDir', path: '/tmp/r' },
    { op: 'runDirEnd', path: '/tmp/r' },
  ];
  for (const m of msgs) assert.deepEqual(parseMessage(formatMessage(m).trim()), m);
  const bads = ['', 'nul', '{', '[]', 'null', '{"op":"pid","id":"a","pid":-1,"start":0}', '{"op":"runDir","path":"relative"}', '{"op":"kill","pid":1}'];
  for (const bad of [...bads, '{"op":"run","id":"a","marker":"","graceMs":1}']) {
    assert.equal(parseMessage(bad), undefined, bad);
  }
});

test('end of file: the whole tree gets SIGTERM at once, a daemon outside the group included; ended runs are left alone', async (t) => {
  const id = randomUUID();
  const marker = `BERTH_RUN_ID=${id}`;
  // sleep in the group; a setsid'd daemon (own session and group) that only the marker finds.
  const root = spawnTree(marker, 'sleep 30 & setsid sleep 31 & wait');
  const other = spawnTree(`BERTH_RUN_ID=${randomUUID()}`, 'exec sleep 32');
  t.after(() => {
    for (const p of [...pidsWithEnv(marker), other.pid!]) try { process.kill(p, 'SIGKILL'); } catch { /* gone */ }
  });
  await waitFor(() => pidsWithEnv(marker).length === 3);
  const input = new PassThrough();
  const done = watch(input);
  input.write(formatMessage({ op: 'run', id, marker, graceMs: 10_000 }));
  input.write(formatMessage({ op: 'pid', id, pid: root.pid!, start: startTicks(root.pid!) }));
  // A launch berth ended itself: its process must be left alone.
  input.write(formatMessage({ op: 'run', id: 'other', marker: `BERTH_RUN_ID=nothing`, graceMs: 0 }));
  input.write(formatMessage({ op: 'pid', id: 'other', pid: other.pid!, start: startTicks(other.pid!) }));
  input.write(formatMessage({ op: 'end', id: 'other' }));
  input.end();
  const report = await done;
  assert.equal(report.runs, 1);
  assert.equal(report.termed, 3, JSON.stringify(report));
  assert.equal(report.killed, 0, 'sleep dies of SIGTERM: no KILL needed');
  assert.deepEqual((await waitGone(marker, 2_000)).left, []);
  assert.equal(other.exitCode, null, 'the ended launch is still running');
});

test('a tree that ignores SIGTERM gets SIGKILL after the grace, not before', async (t) => {
  const id = randomUUID();
  const marker = `BERTH_RUN_ID=${id}`;
  const root = spawnTree(marker, "trap '' TERM; sleep 30 & wait");
  t.after(() => {
    for (const p of pidsWithEnv(marker)) try { process.kill(p, 'SIGKILL'); } catch { /* gone */ }
  });
  await waitFor(() => pidsWithEnv(marker).length === 2);
  const input = new PassThrough();
  const done = watch(input);
  input.end(formatMessage({ op: 'run', id, marker, graceMs: 400 }) + formatMessage({ op: 'pid', id, pid: root.pid!, start: startTicks(root.pid!) }));
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(pidsWithEnv(marker).length, 2, 'still alive within the grace');
  const report = await done;
  const ms = performance.now() - t0;
  assert.ok(ms >= 400, `${ms} ms`);
  assert.equal(report.killed, 2, JSON.stringify(report));
  assert.deepEqual((await waitGone(marker, 2_000)).left, []);
});

test('berth died before it could say the pid: the marker alone finds the service', async (t) => {
  const id = randomUUID();
  const marker = `BERTH_RUN_ID=${id}`;
  spawnTree(marker, 'exec sleep 30');
  t.after(() => {
    for (const p of pidsWithEnv(marker)) try { process.kill(p, 'SIGKILL'); } catch { /* gone */ }
  });
  await waitFor(() => pidsWithEnv(marker).length === 1);
  const input = new PassThrough();
  const done = watch(input);
  input.end(formatMessage({ op: 'run', id, marker, graceMs: 1_000 }));
  const report = await done;
  assert.equal(report.termed, 1);
  assert.deepEqual((await waitGone(marker, 2_000)).left, []);
});

test('release: the watchdog answers once it has closed every lease socket berth sent, one still in flight included', async () => {
  const id = randomUUID();
  const names = [0, 1].map((i) => `berth-test/watchdog-ack/${id}/${i}`);
  const bound = () => names.filter((n) => readFileSync('/proc/net/unix', 'latin1').includes(`@${n}`));
  const servers = await Promise.all(names.map((n) => new Promise<net.Server>((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen({ path: `\0${n}` }, () => resolve(s));
  })));
  const ipc = new EventEmitter();
  const replies: IpcMessage[] = [];
  const input = new PassThrough();
  const done = watch(input, { ipc, reply: (m) => replies.push(m) });
  // The first socket arrives, then the request (the second is still on its way), then the second.
  ipc.emit('message', { op: 'lease', id }, servers[0]);
  ipc.emit('message', { op: 'release', id, leases: 2 });
  assert.deepEqual(replies, [], 'no answer while a socket berth sent has not arrived');
  assert.deepEqual(bound(), [names[1]], 'the one it has is closed at once');
  ipc.emit('message', { op: 'lease', id }, servers[1]);
  assert.deepEqual(replies, [{ op: 'released', id }]);
  assert.deepEqual(bound(), [], 'answered only once none is left');
  // A socket berth closed before Node sent it arrives as the message alone: it counts.
  const other = randomUUID();
  ipc.emit('message', { op: 'release', id: other, leases: 1 });
  ipc.emit('message', { op: 'lease', id: other });
  assert.deepEqual(replies.at(-1), { op: 'released', id: other });
  input.end();
  assert.equal((await done).runs, 0);
  assert.equal(parseIpc({ op: 'release', id, leases: -1 }), undefined);
  assert.equal(parseIpc({ op: 'released' }), undefined);
});

test('markRunGone: live replicas become exited with the reason, once; another run\'s document is not touched', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-run-gone-'));
  try {
    const since = '2026-01-01T00:00:00.000Z';
    const doc = {
      stack: 's.yaml',
      runDir: dir,
      pid: 4242,
      updated: '2026-01-01T00:00:00.000Z',
      replicas: [
        { service: 'web', replica: 0, host: '127.0.0.1', port: 20000, url: 'http://127.0.0.1:20000', pid: 10, state: 'ready', since },
        { service: 'job', replica: 0, host: null, port: null, url: null, pid: 11, state: 'exited', since },
        { service: 'late', replica: 0, host: null, port: 20001, url: 'http://127.0.0.1:20001', pid: null, state: 'pending', since },
      ],
    };
    writeFileSync(join(dir, 'endpoints.json'), JSON.stringify(doc));
    writeFileSync(join(dir, 'events.jsonl'), '');
    assert.equal(markRunGone(dir, 999), 0, 'not the dead berth\'s document');
    assert.equal(markRunGone(dir, 4242), 2);
    const after = JSON.parse(readFileSync(join(dir, 'endpoints.json'), 'utf8'));
    assert.deepEqual(after.replicas.map((r: { state: string }) => r.state), ['exited', 'exited', 'exited']);
    assert.equal(after.ended.by, 'watchdog');
    assert.match(after.ended.reason, /berth \(pid 4242\) died/);
    assert.equal(after.replicas[1].since, '2026-01-01T00:00:00.000Z', 'an exited replica keeps its time');
    const events = readFileSync(join(dir, 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(events.map((e) => `${e.service} ${e.state}`), ['web exited', 'late exited']);
    assert.match(events[0].detail, /died; its watchdog stopped the service/);
    assert.equal(markRunGone(dir, 4242), 0, 'marked once');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
