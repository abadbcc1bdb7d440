/**
 * Redaction rules of diagnostics (docs/run.md "What diagnostics keep, what they redact"):
 * credential names, URL userinfo, authorization headers, bearer tokens, secret flags of a
 * command line, and what is kept on purpose (ports after -p, PATH, PWD, author names).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isSecretName, redactArgv, redactEnv, redactJson, redactReadySpec, redactText, REDACTED } from '../src/util/redact.js';

test('names the old pattern missed are credentials; look-alikes are not', () => {
  for (const n of ['MYSQL_PWD', 'GITHUB_PAT', 'GH_PAT', 'JWT', 'COOKIE', 'SENTRY_DSN', 'DB_PASS', 'apiKey', 'X-Auth-Token', 'OAUTH_CLIENT_SECRET', 'AWS_SECRET_ACCESS_KEY', 'HF_TOKEN', 'PGPASSWORD', 'SESSIONID', '--db-password']) {
    assert.equal(isSecretName(n), true, n);
  }
  for (const n of ['PATH', 'PWD', 'OLDPWD', 'GIT_AUTHOR_NAME', 'MONKEY', 'KEYBOARD_LAYOUT', 'HOSTNAME', 'XDG_SESSION_TYPE', 'PORT', 'BERTH_RUN_ID', 'PATHEXT']) {
    assert.equal(isSecretName(n), false, n);
  }
});

test('environment: secret names hidden whole, credentials inside URLs and connection strings hidden', () => {
  const env = redactEnv({
    DATABASE_URL: 'postgres://app:s3cret@db.internal:5432/app',
    HTTP_PROXY: 'http://u:pass@proxy:3128',
    HTTPS_PROXY: 'http://proxy:3128',
    SENTRY_DSN: 'https://abc123@o1.ingest.sentry.io/42',
    REDIS_URL: 'redis://:p%40ss@cache:6379/0',
    MYSQL_PWD: 'hunter2',
    GITHUB_PAT: 'ghp_x',
    JWT: 'a.b.c',
    COOKIE: 'sid=1',
    ODBC: 'Server=db;Uid=app;Password=hunter2;',
    CALLBACK: 'http://h/cb?access_token=tok123&x=1',
    PATH: '/usr/bin:/bin',
    PWD: '/srv/app',
  });
  assert.deepEqual(env, {
    CALLBACK: `http://h/cb?access_token=${REDACTED}&x=1`,
    COOKIE: REDACTED,
    DATABASE_URL: `postgres://${REDACTED}@db.internal:5432/app`,
    GITHUB_PAT: REDACTED,
    HTTPS_PROXY: 'http://proxy:3128',
    HTTP_PROXY: `http://${REDACTED}@proxy:3128`,
    JWT: REDACTED,
    MYSQL_PWD: REDACTED,
    ODBC: `Server=db;Uid=app;Password=${REDACTED};`,
    PATH: '/usr/bin:/bin',
    PWD: '/srv/app',
    REDIS_URL: `redis://${REDACTED}@cache:6379/0`,
    SENTRY_DSN: REDACTED,
  });
});

test('argv: URL userinfo, -p VALUE unless a port, --password=, --token X, -u USER:PW, header values', () => {
  const argv = ['app', 'http://user:pw@host/', '-p', 'hunter2', '-p', '8080', '-p', '127.0.0.1:{port}:80/tcp', '-phunter2', '-pv', '--password=abc', '--token', 'tok', '--no-auth', '--verbose', '-u', 'me:pw', '-H', 'Authorization: Bearer abcdefghijkl', '--header=Cookie: sid=1', 'API_KEY=k1', '{port}'];
  assert.deepEqual(redactArgv(argv), ['app', `http://${REDACTED}@host/`, '-p', REDACTED, '-p', '8080', '-p', '127.0.0.1:{port}:80/tcp', `-p${REDACTED}`, '-pv', `--password=${REDACTED}`, '--token', REDACTED, '--no-auth', '--verbose', '-u', `me:${REDACTED}`, '-H', `Authorization: ${REDACTED}`, `--header=Cookie: ${REDACTED}`, `API_KEY=${REDACTED}`, '{port}']);
});

test('ready spec: a cmd: probe is read as a command line; an http probe keeps its URL without userinfo', () => {
  assert.equal(
    redactReadySpec(`cmd:curl -sf -H 'Authorization: Bearer eyJhbGciOi.x.y' -u "me:my pw" http://127.0.0.1:{port}/ --token t0k -p {port}`),
    `cmd:curl -sf -H 'Authorization: ${REDACTED}' -u "me:${REDACTED}" http://127.0.0.1:{port}/ --token ${REDACTED} -p {port}`,
  );
  assert.equal(redactReadySpec('http://admin:pw@127.0.0.1:{port}/health'), `http://${REDACTED}@127.0.0.1:{port}/health`);
  assert.equal(redactReadySpec('tcp'), 'tcp');
});

test('messages: the same shapes inside free text, JSON and headers', () => {
  assert.equal(
    redactText(`the probe cmd:curl -H "Authorization: Basic dXNlcjpwYXNz" http://a:b@127.0.0.1:1/ --password 'x y' did not succeed`),
    `the probe cmd:curl -H "Authorization: ${REDACTED}" http://${REDACTED}@127.0.0.1:1/ --password ${REDACTED} did not succeed`,
  );
  // A message quoting a cmd: probe: the command-line rules apply from "cmd:" on.
  assert.equal(redactText('the probe cmd:mysqladmin -phunter2 ping did not succeed'), `the probe cmd:mysqladmin -p${REDACTED} ping did not succeed`);
  assert.equal(redactText('use -phunter2 elsewhere'), 'use -phunter2 elsewhere');
  assert.equal(redactText('{"password": "z", "user": "me"}'), `{"password": "${REDACTED}", "user": "me"}`);
  assert.equal(redactText('got 401 for bearer abcdefgh12345678'), `got 401 for bearer ${REDACTED}`);
  // Kept: what explains a failure.
  for (const s of ['port 20000 is not available: it is in use: 20000 LISTEN by pid 7 (node)', '/tmp/berth-x/stdout.log', 'fe80::1', '[::1]:8080', 'http://127.0.0.1:8080/health', 'service "web": unknown key "x"']) {
    assert.equal(redactText(s), s);
  }
});

test('a whole bundle: every string passes, Maps become objects', () => {
  const bundle = { reason: 'probe http://u:pw@h/ failed', nested: [{ cmd: 'x --api-key K' }], m: new Map([['a', 'postgres://u:p@h/db']]) };
  const out = JSON.parse(JSON.stringify(bundle, redactJson));
  assert.deepEqual(out, { reason: `probe http://${REDACTED}@h/ failed`, nested: [{ cmd: `x --api-key ${REDACTED}` }], m: { a: `postgres://${REDACTED}@h/db` } });
});

test('property: redaction is idempotent, never throws, and is fast on any text', () => {
  const word = fc.oneof(
    fc.string({ maxLength: 12 }),
    fc.constantFrom('http://', 'u:pw@', '@', '-p', '--token', '=', ':', 'Authorization:', 'Bearer', "'", '"', ' ', 'PASSWORD', '{port}', 'x-api-key'),
  );
  const text = fc.array(word, { maxLength: 40 }).map((ws) => ws.join(''));
  fc.assert(
    fc.property(text, (s) => {
      const t0 = performance.now();
      const once = redactText(s, { commandLine: true });
      assert.equal(redactText(once, { commandLine: true }), once);
      assert.ok(performance.now() - t0 < 1000);
    }),
    { seed: 4242, numRuns: 400 },
  );
});

test('no quadratic blow-up on long runs of name characters, "@" or "://"', () => {
  for (const s of ['a'.repeat(200_000), 'a.'.repeat(100_000), 'x-'.repeat(100_000), 'http://' + '@'.repeat(100_000), 'a://'.repeat(50_000), 'k=' + 'v'.repeat(200_000), '"'.repeat(100_000)]) {
    const t0 = performance.now();
    redactText(s, { commandLine: true });
    const ms = performance.now() - t0;
    assert.ok(ms < 2000, `${s.slice(0, 8)}… took ${ms} ms`);
  }
});

test('property: a planted credential never survives, whatever words surround it', () => {
  const secret = fc.stringMatching(/^[A-Za-z0-9]{10,16}$/).map((s) => `Zq${s}`);
  const plant = fc.constantFrom(
    (s: string) => [`http://user:${s}@db.example/x`],
    (s: string) => [`postgres://${s}@db/x`],
    (s: string) => [`--password=${s}`],
    (s: string) => ['--token', s],
    (s: string) => ['--api-key', s],
    (s: string) => ['-H', `Authorization: Bearer ${s}`],
    (s: string) => ['-H', `Cookie: sid=${s}`],
    (s: string) => [`MYSQL_PWD=${s}`],
    (s: string) => ['-p', s],
    (s: string) => ['-u', `me:${s}`],
    (s: string) => [`http://h/cb?access_token=${s}&x=1`],
  );
  const filler = fc.array(fc.oneof(fc.stringMatching(/^[a-z0-9./:{}-]{0,10}$/), fc.constantFrom('-v', '--port', '{port}', 'serve')), { maxLength: 4 });
  fc.assert(
    fc.property(secret, plant, filler, filler, (s, p, before, after) => {
      const argv = [...before, ...p(s), ...after];
      const shown = [JSON.stringify(redactArgv(argv)), redactText(argv.join(' '), { commandLine: true }), redactReadySpec(`cmd:${argv.join(' ')}`)];
      for (const x of shown) assert.ok(!x.includes(s), `${JSON.stringify(argv)} → ${x}`);
    }),
    { seed: 909, numRuns: 500 },
  );
});
