/**
 * Credentials planted in every place a failed launch records (argv, environment, the ready
 * spec, the failure message) never reach diagnostics.json or a stack's events.jsonl, while
 * what explains the failure (port, phase, the non-secret argv) stays.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireNetns } from './helpers/netns.js';
import { berthSh, kv, netnsSh, q, sandbox, serviceSh, timed } from './fixtures/services/launch-harness.js';

const P = 20000;

/** Every regular file below dir (a bundle's folder layout is not this test's business). */
function filesBelow(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...filesBelow(p));
    else out.push(p);
  }
  return out;
}

const SECRET_ENV = {
  DATABASE_URL: 'postgres://app:ZqXI1@db.internal:5432/app',
  HTTP_PROXY: 'http://u:ZqXJ2@proxy:3128',
  SENTRY_DSN: 'https://ZqXK3@o1.ingest.sentry.io/42',
  MYSQL_PWD: 'ZqXL4',
  GITHUB_PAT: 'ZqXM5',
  JWT: 'ZqXN6',
  COOKIE: 'sid=ZqXO7',
};

const READY = `cmd:sh -c 'exit 1' probe -H 'Authorization: Bearer ZqXA8abc' http://u:ZqXB9@127.0.0.1:{port}/ --password ZqXC10 -pZqXD11`;
const SERVICE_ARGS = `--host 127.0.0.1 http://user:ZqXE12@host/ --token ZqXF13 -p ZqXG14 --db-password=ZqXH15`;

test('berth run: a failed launch keeps no credential in diagnostics.json', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  Object.assign(box.env, SECRET_ENV);
  const r = await netnsSh({}, box, `
${timed('RC', `${berthSh} run --port ${P} --ready-timeout 1s --ready ${q(READY)} -- ${serviceSh} ${SERVICE_ARGS}`)}
`);
  const v = kv(r.stdout);
  assert.equal(v.get('RC'), '75', r.stdout + r.stderr);
  const dir = /diagnostics: (\S+)/.exec(r.stderr)?.[1];
  assert.ok(dir, r.stderr);
  const bundle = filesBelow(dir).find((f) => f.endsWith('diagnostics.json'));
  assert.ok(bundle, `no diagnostics.json under ${dir}`);
  const text = readFileSync(bundle, 'utf8');
  assert.doesNotMatch(text, /ZqX[A-Z][0-9]/, text);
  const d = JSON.parse(text);
  // What explains the failure is still there.
  assert.equal(d.exitCode, 75);
  assert.equal(d.port, P);
  assert.match(d.ready, /^cmd:sh -c 'exit 1' probe -H 'Authorization: <redacted>' http:\/\/<redacted>@127\.0\.0\.1:\{port\}\/ --password <redacted> -p<redacted>$/);
  assert.ok(d.command.includes('--host') && d.command.includes('127.0.0.1'), JSON.stringify(d.command));
  assert.ok(d.command.includes(`http://<redacted>@host/`), JSON.stringify(d.command));
  assert.equal(d.env.DATABASE_URL, 'postgres://<redacted>@db.internal:5432/app');
  assert.equal(d.env.MYSQL_PWD, '<redacted>');
  assert.match(d.reason, /the probe cmd:.* did not succeed/);
});

test('berth up: a failed replica keeps no credential in events.jsonl or its bundle', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  Object.assign(box.env, SECRET_ENV);
  const stack = join(box.dir, 'stack.yaml');
  writeFileSync(
    stack,
    [
      'services:',
      '  web:',
      `    port: ${P}`,
      `    command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(join(import.meta.dirname, 'fixtures/services/service.mjs'))}, ${SERVICE_ARGS.split(' ').map((a) => JSON.stringify(a)).join(', ')}]`,
      `    ready: ${JSON.stringify(READY)}`,
      '    ready_timeout: 1s',
      '    env: { API_TOKEN: ZqXP16, UPSTREAM: "http://svc:ZqXQ17@up:80/" }',
      '',
    ].join('\n'),
  );
  const run = join(box.dir, 'run');
  const r = await netnsSh({}, box, timed('RC', `${berthSh} up ${q(stack)} --run-dir ${q(run)}`));
  const v = kv(r.stdout);
  assert.equal(v.get('RC'), '75', r.stdout + r.stderr);
  const files = filesBelow(run).filter((f) => f.endsWith('.json') || f.endsWith('.jsonl'));
  assert.ok(files.some((f) => f.endsWith('events.jsonl')) && files.some((f) => f.endsWith('diagnostics.json')), files.join('\n'));
  for (const f of files) assert.doesNotMatch(readFileSync(f, 'utf8'), /ZqX[A-Z][0-9]/, f);
  const events = readFileSync(files.find((f) => f.endsWith('events.jsonl'))!, 'utf8');
  assert.match(events, /<redacted>/, 'the failure detail quotes the probe, redacted');
});
