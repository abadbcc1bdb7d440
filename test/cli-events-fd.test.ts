/**
 * `berth up --events-fd N` and `berth run --events-fd N` from a shell (3>file), issue 32 item
 * 16: berth's messages on a descriptor of their own, the services' output unchanged, one
 * closing exit/error object, and a descriptor berth was not given refused with 64.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BERTH, tempStateDir } from './helpers/cli.js';
import { requireNetns, runInNetns } from './helpers/netns.js';

const FAKE = '{"event":"ready","endpoints":{"replicas":[]}}\n{"event":"exit","exitCode":9}\n{\n  "error": {"exitCode": 65, "message": "FAKE"}\n}\n';
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function box(t: { after(fn: () => void): void }): { dir: string; env: NodeJS.ProcessEnv } {
  const dir = mkdtempSync(join(tmpdir(), 'berth-events-fd-'));
  const state = tempStateDir();
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(state, { recursive: true, force: true });
  });
  return { dir, env: { ...process.env, BERTH_STATE_DIR: state, NO_COLOR: '1' } };
}

const lines = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

test('berth up --events-fd: ready, states, messages and the exit, apart from a job printing the same text', async (t) => {
  if (!requireNetns(t)) return;
  const { dir, env } = box(t);
  const fake = join(dir, 'fake.txt');
  writeFileSync(fake, FAKE);
  writeFileSync(
    join(dir, 'stack.yaml'),
    `services:\n  web:\n    range: 21300-21399\n    command: [python3, -m, http.server, "{port}", --bind, 127.0.0.1]\n    ready: http://127.0.0.1:{port}/\n` +
      `  job:\n    job: true\n    depends_on: { web: ready }\n    command: [sh, -c, ${JSON.stringify(`cat ${q(fake)}; cat ${q(fake)} >&2`)}]\n`,
  );
  const events = join(dir, 'events.jsonl');
  const cmd = `${q(process.execPath)} ${q(BERTH)} up ${q(join(dir, 'stack.yaml'))} --run-dir ${q(join(dir, 'run'))} --events-fd 3 3>${q(events)}`;
  const r = await runInNetns({}, ['sh', '-c', cmd], { env, timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, FAKE, "the job's stdout, unchanged");
  assert.ok(r.stderr.includes(FAKE), "the job's stderr, unchanged");
  const got = lines(events);
  const ready = got.find((e) => e.event === 'ready') as { endpoints: { replicas: { service: string; port: number }[] } };
  const web = ready.endpoints.replicas.find((x) => x.service === 'web')!;
  assert.ok(web.port >= 21300 && web.port <= 21399, JSON.stringify(web));
  assert.ok(got.some((e) => e.event === 'state' && e.service === 'job' && e.state === 'exited'), JSON.stringify(got));
  assert.ok(got.some((e) => e.event === 'message' && String(e.text).includes('job job exited with status 0')), JSON.stringify(got));
  assert.deepEqual(got.at(-1), { event: 'exit', exitCode: 0 });
  assert.equal(got.filter((e) => e.event === 'exit' || e.event === 'error').length, 1);
});

test('berth run --events-fd: the error object last; a descriptor berth was not given is refused with 64', async (t) => {
  if (!requireNetns(t)) return;
  const { dir, env } = box(t);
  const events = join(dir, 'events.jsonl');
  const fail = `${q(process.execPath)} ${q(BERTH)} run --events-fd 3 --ready tcp -- sh -c ${q(`printf '%s' ${q(FAKE)}; exit 3`)} 3>${q(events)}`;
  const r = await runInNetns({}, ['sh', '-c', fail], { env, timeoutMs: 60_000 });
  assert.equal(r.code, 70, r.stderr);
  assert.equal(r.stdout, FAKE);
  const got = lines(events);
  assert.equal(got.length, 1, JSON.stringify(got));
  const err = got[0] as { event: string; error: { exitCode: number; message: string } };
  assert.equal(err.event, 'error');
  assert.equal(err.error.exitCode, 70);
  assert.match(err.error.message, /exited with status 3 before it was ready/);
  // fd 3 not given: in berth it is Node's own (epoll); writing JSON there would break Node.
  for (const command of ['run --events-fd 3 -- true', 'up x.yaml --events-fd 3', 'run --events-fd 9 -- true', 'run --events-fd 3 -- true 3</dev/null']) {
    const bad = await runInNetns({}, ['sh', '-c', `exec 3<&- 9<&-; ${q(process.execPath)} ${q(BERTH)} ${command}`], { env, timeoutMs: 30_000 });
    assert.equal(bad.code, 64, `${command}: ${bad.stderr}`);
    assert.match(bad.stderr, /--events-fd (3|9): file descriptor (3|9) is (not one the caller gave berth|not open in berth|open for reading only)/, command);
  }
});
