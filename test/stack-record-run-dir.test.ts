import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { BerthError, EXIT } from '../src/errors.js';
import { applyUpdate, createRunDir, formatEvent, runStamp, type EndpointRecord, type EndpointsDocument } from '../src/stack/index.js';

const root = mkdtempSync(join(tmpdir(), 'berth-rundir-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = () => {
  const d = join(root, `case-${n++}`);
  mkdirSync(d);
  return d;
};
const mode = (p: string) => statSync(p).mode & 0o777;
const readJson = <T>(p: string): T => JSON.parse(readFileSync(p, 'utf8')) as T;
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

test('runStamp: compact UTC, seconds precision', () => {
  assert.equal(runStamp(new Date('2026-11-29T22:49:50.123Z')), '20261129T224950Z');
  assert.equal(runStamp(new Date('2026-01-02T03:04:05.000Z')), '20260102T030405Z');
});

test('default run dir: ./berth-runs/<UTC stamp>, private, a numbered suffix when taken', () => {
  const cwd = fresh();
  const now = new Date('2026-11-29T22:49:50.500Z');
  const a = createRunDir({ stack: 'stack.yaml', cwd, now });
  assert.equal(a.path, join(cwd, 'berth-runs', '20261129T224950Z'));
  assert.equal(mode(join(cwd, 'berth-runs')), 0o700);
  assert.equal(mode(a.path), 0o700);
  assert.equal(mode(a.logsDir), 0o700);
  assert.equal(mode(a.endpointsFile), 0o600);
  const doc = readJson<EndpointsDocument>(a.endpointsFile);
  assert.deepEqual({ ...doc, updated: 'x' }, { stack: 'stack.yaml', runDir: a.path, pid: process.pid, updated: 'x', replicas: [] });
  assert.match(doc.updated, ISO_MS);
  const b = createRunDir({ stack: 'stack.yaml', cwd, now });
  const c = createRunDir({ stack: 'stack.yaml', cwd, now });
  assert.equal(b.path, `${a.path}-2`);
  assert.equal(c.path, `${a.path}-3`);
  assert.deepEqual(a.logFiles('engine', 1), { out: join(a.path, 'logs', 'engine-1.out'), err: join(a.path, 'logs', 'engine-1.err') });
  assert.equal(a.diagDir('engine', 1), join(a.path, 'diagnostics', 'engine-1'));
  assert.equal(a.diagDir('engine', 1, 2), join(a.path, 'diagnostics', 'engine-1.restart-2'));
});

test('--run-dir: created with parents, or an existing private empty folder', () => {
  const cwd = fresh();
  const d = createRunDir({ stack: 's.yaml', cwd, dir: 'runs/job-42' });
  assert.equal(d.path, join(cwd, 'runs', 'job-42'));
  assert.equal(mode(d.path), 0o700);
  const pre = join(cwd, 'premade');
  mkdirSync(pre, { mode: 0o700 });
  assert.equal(createRunDir({ stack: 's.yaml', dir: pre }).path, pre);
});

test('--run-dir refused: a previous run, a symlink, not a directory, writable by others', () => {
  const cwd = fresh();
  const used = createRunDir({ stack: 's.yaml', cwd, dir: 'used' });
  assert.throws(() => createRunDir({ stack: 's.yaml', cwd, dir: 'used' }), (e: BerthError) =>
    e.exitCode === EXIT.USAGE && e.message === `run directory ${used.path} already holds a run (endpoints.json); give a new --run-dir, or remove the old one`);
  const link = join(cwd, 'link');
  mkdirSync(join(cwd, 'target'), { mode: 0o700 });
  symlinkSync(join(cwd, 'target'), link);
  assert.throws(() => createRunDir({ stack: 's.yaml', dir: link }), (e: BerthError) =>
    e.exitCode === EXIT.IOERR && e.message === `run directory ${link} is a symbolic link (its logs could be redirected); give the real path with --run-dir, or remove the link`);
  const file = join(cwd, 'file');
  writeFileSync(file, '');
  assert.throws(() => createRunDir({ stack: 's.yaml', dir: file }), (e: BerthError) =>
    e.exitCode === EXIT.IOERR && e.message === `run directory ${file} exists but is not a directory; give another --run-dir`);
  const open = join(cwd, 'open');
  mkdirSync(open);
  chmodSync(open, 0o777);
  assert.throws(() => createRunDir({ stack: 's.yaml', dir: open }), (e: BerthError) =>
    e.exitCode === EXIT.IOERR && e.message === `run directory ${open} is writable by group or others (mode 0777), so others could alter logs and endpoints; it is a shared directory: do not change its mode; give --run-dir ${join(open, `berth-${process.getuid!()}`)} (berth creates it 0700)`);
  // The default base folder is checked too.
  const cwd2 = fresh();
  mkdirSync(join(cwd2, 'berth-runs'));
  chmodSync(join(cwd2, 'berth-runs'), 0o775);
  // Group-writable but ours: a private subdirectory, or chmod since it is not a shared one.
  assert.throws(() => createRunDir({ stack: 's.yaml', cwd: cwd2 }), /berth-runs is writable by group or others \(mode 0775\).*give --run-dir .*berth-runs\/berth-\d+ .*, or, if no one else needs .*berth-runs: chmod 700 /);
});

test('applyUpdate: host/pid/port stick, url follows the port, since changes with the state only', () => {
  const table: EndpointRecord[] = [];
  const t0 = new Date('2026-11-29T22:49:50.001Z');
  const t1 = new Date('2026-11-29T22:49:51.002Z');
  const t2 = new Date('2026-11-29T22:49:52.003Z');
  assert.deepEqual(applyUpdate(table, { service: 'engine', replica: 0, state: 'pending', host: '::1', t: t0 }), { t: t0.toISOString(), service: 'engine', replica: 0, state: 'pending' });
  assert.deepEqual(applyUpdate(table, { service: 'engine', replica: 0, state: 'starting', port: 20000, pid: 42, t: t1 }), {
    t: '2026-11-29T22:49:51.002Z', service: 'engine', replica: 0, state: 'starting', pid: 42, port: 20000,
  });
  assert.deepEqual(applyUpdate(table, { service: 'engine', replica: 0, state: 'starting', detail: 'still loading', t: t2 }).detail, 'still loading');
  assert.deepEqual(table, [{ service: 'engine', replica: 0, host: '::1', port: 20000, url: 'http://[::1]:20000', pid: 42, state: 'starting', since: '2026-11-29T22:49:51.002Z' }]);
  const ev = applyUpdate(table, { service: 'engine', replica: 0, state: 'exited', code: null, signal: 'SIGKILL', t: t2 });
  assert.equal(formatEvent(ev), '{"t":"2026-11-29T22:49:52.003Z","service":"engine","replica":0,"state":"exited","pid":42,"port":20000,"code":null,"signal":"SIGKILL"}\n');
  applyUpdate(table, { service: 'client', replica: 0, state: 'starting', pid: 7, t: t2 });
  assert.deepEqual(table[1], { service: 'client', replica: 0, host: null, port: null, url: null, pid: 7, state: 'starting', since: t2.toISOString() });
});

test('update(): events.jsonl gains one valid JSON line per change; endpoints.json follows', () => {
  const d = createRunDir({ stack: 'stack.yaml', cwd: fresh() });
  d.update({ service: 'engine', replica: 0, state: 'pending', host: '127.0.0.1' });
  d.update({ service: 'engine', replica: 1, state: 'pending', host: '127.0.0.1' });
  d.update({ service: 'engine', replica: 0, state: 'starting', port: 20000, pid: 100 });
  d.update({ service: 'engine', replica: 0, state: 'owned' });
  d.update({ service: 'engine', replica: 0, state: 'ready', detail: 'after 0.52s' });
  d.update({ service: 'engine', replica: 1, state: 'failed', port: 20100, pid: 101, code: 70, detail: 'exit 3 before ready' });
  d.close();
  const lines = readFileSync(d.eventsFile, 'utf8').split('\n');
  assert.equal(lines.pop(), '', 'ends with a newline');
  const events = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(events.length, 6);
  for (const e of events) {
    assert.match(e.t as string, ISO_MS);
    assert.deepEqual(Object.keys(e).slice(0, 4), ['t', 'service', 'replica', 'state']);
  }
  assert.deepEqual(events.map((e) => `${e.service}/${e.replica} ${e.state} ${e.port ?? '-'} ${e.pid ?? '-'} ${e.code ?? '-'}`), [
    'engine/0 pending - - -',
    'engine/1 pending - - -',
    'engine/0 starting 20000 100 -',
    'engine/0 owned 20000 100 -',
    'engine/0 ready 20000 100 -',
    'engine/1 failed 20100 101 70',
  ]);
  assert.equal(events[4]!.detail, 'after 0.52s');
  const doc = readJson<EndpointsDocument>(d.endpointsFile);
  assert.deepEqual(doc.replicas.map(({ since: _, ...r }) => r), [
    { service: 'engine', replica: 0, host: '127.0.0.1', port: 20000, url: 'http://127.0.0.1:20000', pid: 100, state: 'ready' },
    { service: 'engine', replica: 1, host: '127.0.0.1', port: 20100, url: 'http://127.0.0.1:20100', pid: 101, state: 'failed' },
  ]);
  assert.deepEqual(readdirSync(d.path).sort(), ['endpoints.json', 'events.jsonl', 'logs'], 'no temporary files left behind');
});

test('endpoints.json is complete at every instant: a reader in another process never sees a partial file', async () => {
  const d = createRunDir({ stack: 'stack.yaml', cwd: fresh() });
  const stop = join(d.path, 'stop');
  // The reader parses the file as fast as it can until told to stop, and reports what it saw.
  const reader = spawn(process.execPath, ['-e', `
    const fs = require('node:fs');
    let reads = 0, bad = 0, maxReplicas = 0, first = '';
    while (!fs.existsSync(${JSON.stringify(stop)})) {
      let text;
      try { text = fs.readFileSync(${JSON.stringify(d.endpointsFile)}, 'utf8'); } catch (e) { bad++; if (!first) first = e.code; continue; }
      reads++;
      try { maxReplicas = Math.max(maxReplicas, JSON.parse(text).replicas.length); } catch { bad++; if (!first) first = text.slice(-40); }
    }
    process.stdout.write(JSON.stringify({ reads, bad, maxReplicas, first }));
  `], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  reader.stdout.setEncoding('utf8').on('data', (c) => (out += c));
  const done = new Promise<void>((r) => reader.on('close', () => r()));
  await new Promise((r) => setTimeout(r, 150)); // let the reader start reading
  const states = ['pending', 'starting', 'owned', 'ready', 'stopping', 'exited'] as const;
  const started = Date.now();
  let updates = 0;
  // Changes over ~0.6 s of wall time, yielding so the reader interleaves with the writer.
  for (let round = 0; Date.now() - started < 600 || updates < 120; round++) {
    for (let r = 0; r < 20; r++) {
      d.update({ service: `svc${r % 5}`, replica: r, state: states[round % states.length]!, port: 20000 + r, pid: 1000 + r, host: '127.0.0.1' });
      updates++;
    }
    await new Promise((res) => setImmediate(res));
  }
  writeFileSync(stop, '');
  await done;
  d.close();
  const seen = JSON.parse(out) as { reads: number; bad: number; maxReplicas: number; first: string };
  assert.equal(seen.bad, 0, `reader saw a broken endpoints.json: ${seen.first}`);
  assert.ok(seen.reads > 20, `reader read ${seen.reads} times`);
  assert.equal(seen.maxReplicas, 20);
  assert.equal(readFileSync(d.eventsFile, 'utf8').split('\n').filter(Boolean).length, updates);
  assert.ok(!readdirSync(d.path).some((f) => f.endsWith('.tmp')));
  assert.ok(existsSync(d.endpointsFile));
});
