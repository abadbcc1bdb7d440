/**
 * `berth up` with what real servers need, run for real (built CLI, network namespace):
 * a replica's own directory ({dir}: made 0700 before the first start, the same folder as a
 * template's {{dir}}, kept across restarts, named in diagnostics), one-shot steps (awaited
 * with `completed`: no port, exit 0 is completion; a server that exits 0 early is told the
 * fix), schemes in placeholders, templates, endpoints.json and the ready message, the
 * sun_path check of a run directory, and `dir_owner:` (berth as root gives {dir} away).
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { box, events, svc, up } from './fixtures/up/harness.js';

const SH = '/bin/sh';

test('one-shot steps, {dir} and {{dir}}, schemes: a step awaited with completed has no port, a step that never binds its port completes, URLs say postgresql://', async (t) => {
  if (!requireNetns(t)) return;
  const b = box(`
services:
  init:
    command: [${SH}, -c, 'echo made > "$0/marker"; stat -c %a "$0" > "$0/mode"', "{dir}"]
  db:
    scheme: postgresql
    port: 20500
    templates: { conf: conf.mustache }
    command: ${svc('--port', '{port}', '--show')}
    env: { X_DIR: "{dir}", X_CONF: "{templates.conf}" }
    ready: "cmd:test -f {dir}/../init-0/marker"
    depends_on: { init: completed }
  setup:
    port: 20600
    command: ${svc('--exit-after', '100')}
  job:
    job: true
    command: [${SH}, -c, 'test "$0" = postgresql://127.0.0.1:20500 && grep -qx "url=$0" "$1" && grep -qx "dir=$BERTH_RUN_DIR/data/db-0" "$1" && test "$2" = "$BERTH_RUN_DIR/data/job-0" && test "$BERTH_REPLICA_DIR" = "$2"', "{db.url}", "{db.port}", "{dir}"]
    depends_on: { db: ready, setup: completed }
`);
  t.after(() => b.cleanup());
  writeFileSync(join(b.dir, 'conf.mustache'), 'url={{url}}\ndir={{dir}}\n');
  // The job checks the conf of db through its own path: give it db's rendered file.
  writeFileSync(b.stack, readFileSync(b.stack, 'utf8').replace('"{db.port}"', `"${join(b.runDir, 'data', 'db-0', 'conf')}"`));
  const r = await up(b).result;
  assert.equal(r.code, 0, r.stderr);
  const initDir = join(b.runDir, 'data', 'init-0');
  assert.equal(readFileSync(join(initDir, 'marker'), 'utf8'), 'made\n');
  assert.equal(readFileSync(join(initDir, 'mode'), 'utf8'), '700\n', 'made 0700 before the start');
  const doc = JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8')) as { replicas: { service: string; port: number | null; url: string | null; scheme?: string | null; state: string }[] };
  const rec = (s: string) => doc.replicas.find((x) => x.service === s)!;
  assert.deepEqual([rec('init').port, rec('init').state], [null, 'exited'], 'awaited with completed: no port');
  assert.deepEqual([rec('db').url, rec('db').scheme], ['postgresql://127.0.0.1:20500', 'postgresql']);
  assert.deepEqual([rec('setup').port, rec('setup').state], [20600, 'exited'], 'declared its port, never bound it, exit 0 is completion');
  assert.match(r.stderr, /db\/0\s+postgresql:\/\/127\.0\.0\.1:20500/, 'the ready message in the scheme');
  const shown = JSON.parse(readFileSync(join(b.runDir, 'logs', 'db-0.out'), 'utf8').split('\n')[0]!) as { env: Record<string, string> };
  assert.equal(shown.env.X_DIR, join(b.runDir, 'data', 'db-0'));
  assert.equal(shown.env.BERTH_REPLICA_DIR, join(b.runDir, 'data', 'db-0'));
});

test('a server that exits 0 before it is ready fails with the fix named; so does a dependent waiting for a completed step to be ready', async (t) => {
  if (!requireNetns(t)) return;
  const b = box(`
services:
  srv:
    command: ${svc('--exit-after', '100')}
    ready: http://127.0.0.1:{port}/health
`);
  t.after(() => b.cleanup());
  const r = await up(b).result;
  assert.equal(r.code, 70, r.stderr);
  assert.match(r.stderr, /^ {2}directory: {3}.*\/run\/data\/srv-0\/$/m, 'the failure names the replica\'s directory');
  assert.match(r.stderr, /exited with status 0 before it was ready \(phase \w+\); if "srv" is a one-shot step \(a migration, initdb\), let the services that need it wait with depends_on: \{ srv: completed \}/);

  const c = box(`
services:
  step:
    command: ${svc('--exit-after', '100')}
  web:
    command: ${svc('--port', '{port}')}
    depends_on: { step: ready }
`);
  t.after(() => c.cleanup());
  const r2 = await up(c).result;
  assert.equal(r2.code, 70, r2.stderr);
  assert.match(r2.stderr, /web cannot start: it waits for step to be ready, but step\/0 exited \(status 0\); if step is a one-shot step, wait for it with depends_on: \{ step: completed \}/);
});

test('{dir} is kept across a restart of its replica and named in the failed attempt\'s diagnostics', async (t) => {
  if (!requireNetns(t)) return;
  const b = box(`
services:
  flaky:
    restart: on-failure
    restart_limit: 1
    command: [${SH}, -c, 'if [ -f "$0/seen" ]; then exec "$2" "$3" --port "$1"; fi; touch "$0/seen"; exit 3', "{dir}", "{port}", ${JSON.stringify(process.execPath)}, ${JSON.stringify(join(process.cwd(), 'test/fixtures/up/svc.mjs'))}]
    ready: http://127.0.0.1:{port}/health
  job:
    job: true
    command: [${SH}, -c, "exit 0"]
    depends_on: { flaky: ready }
`);
  t.after(() => b.cleanup());
  const r = await up(b).result;
  assert.equal(r.code, 0, r.stderr);
  assert.equal(events(b).filter((e) => e.service === 'flaky' && e.state === 'failed').length, 1, 'the first attempt failed, the restart found its file');
  const diagRoot = join(b.runDir, 'diagnostics');
  const bundles = readdirSync(diagRoot, { recursive: true }).map(String).filter((f) => f.endsWith('diagnostics.json'));
  assert.equal(bundles.length, 1, bundles.join(', '));
  const diag = JSON.parse(readFileSync(join(diagRoot, bundles[0]!), 'utf8')) as { dir?: string };
  assert.equal(diag.dir, join(b.runDir, 'data', 'flaky-0'));
});

test('a run directory too deep for a socket under {dir} is refused (64) before anything starts', async (t) => {
  if (!requireNetns(t)) return;
  const b = box(`
services:
  engine:
    command: ${svc('--port', '{port}')}
    env: { X_SOCK: "ipc://{dir}/engine.sock" }
`);
  t.after(() => b.cleanup());
  b.runDir = join(b.dir, 'd'.repeat(100));
  const r = await up(b).result;
  assert.equal(r.code, 64, r.stderr);
  assert.match(r.stderr, /service "engine" \(line 3\): env X_SOCK: the Unix socket path .*engine\.sock is \d+ bytes, but a socket path holds at most 107 \(sun_path\); use a --run-dir of at most \d+ bytes/);
  assert.ok(!existsSync(join(b.runDir, 'events.jsonl')) || !events(b).some((e) => e.state === 'starting'), 'nothing started');
});

test('dir_owner: berth as root gives {dir} to the user, and names the folder that user cannot pass through', async (t) => {
  if (!requireNetns(t)) return;
  if (process.getuid?.() !== 0) {
    if (process.env.CI === 'true') assert.fail('dir_owner needs root in CI');
    t.skip('SKIP: dir_owner needs berth to run as root');
    return;
  }
  const yaml = `
services:
  step:
    dir_owner: nobody
    command: [setpriv, --reuid=nobody, --regid=nogroup, --clear-groups, ${SH}, -c, 'touch "$0/by-nobody"', "{dir}"]
  job:
    job: true
    command: [${SH}, -c, "exit 0"]
    depends_on: { step: completed }
`;
  const b = box(yaml);
  t.after(() => b.cleanup());
  // mkdtemp made the box 0700: nobody may not pass through it.
  const r = await up(b).result;
  assert.equal(r.code, 64, r.stderr);
  assert.ok(r.stderr.includes(`nobody cannot reach ${join(b.runDir, 'data', 'step-0')}: it may not pass through ${b.dir} (mode 700)`), r.stderr);
  assert.match(r.stderr, /chmod o\+x /);

  const c = box(yaml);
  t.after(() => c.cleanup());
  chmodSync(c.dir, 0o711);
  const r2 = await up(c).result;
  assert.equal(r2.code, 0, r2.stderr);
  const made = statSync(join(c.runDir, 'data', 'step-0', 'by-nobody'));
  const dir = statSync(join(c.runDir, 'data', 'step-0'));
  assert.equal(made.uid, 65534);
  assert.deepEqual([dir.uid, dir.mode & 0o777], [65534, 0o700]);
  assert.equal(statSync(c.runDir).mode & 0o777, 0o711, 'the run directory lets it pass, never list');
});
