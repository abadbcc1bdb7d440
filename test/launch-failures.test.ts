/**
 * Launches that cannot succeed end fast, with the right exit code, a message that names the
 * cause, and a diagnostics bundle that survives berth's cleanup: a busy port (69), a service
 * that dies before it binds (70, well before the deadline), a stranger taking the port in
 * the release window (69, never "ready"), and a readiness deadline (75).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireNetns } from './helpers/netns.js';
import { berthSh, countLeases, kv, netnsSh, q, readJson, sandbox, serviceSh, SERVICES, NODE, timed, waitListen } from './fixtures/services/launch-harness.js';

const P = 20000;

test('occupied port: exit 69 naming the holder, and the bundle records it', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  const diag = join(box.dir, 'diag');
  t.after(() => box.cleanup());
  const r = await netnsSh({}, box, `
${serviceSh} --port ${P} --host 0.0.0.0 > /dev/null & H=$!
echo "HOLDER=$H"
${waitListen(P)}
${timed('RC', `${berthSh} run --port ${P} --diag-dir ${q(diag)} --ready http://127.0.0.1:{port}/ -- ${serviceSh}`)}
${countLeases}
kill $H
`);
  const v = kv(r.stdout);
  const holder = v.get('HOLDER')!;
  assert.equal(v.get('RC'), '69', r.stdout + r.stderr);
  assert.match(r.stderr, new RegExp(`port ${P} is not available: it is in use: ${P} LISTEN by pid ${holder} \\(`));
  assert.match(r.stderr, new RegExp(`diagnostics: ${diag}`));
  assert.equal(v.get('LEASES'), '0');
  const d = readJson(join(diag, 'diagnostics.json'));
  assert.equal(d.phase, 'reserve');
  assert.equal(d.exitCode, 69);
  assert.equal(d.port, P);
  assert.equal(d.child, null, 'nothing was started');
  assert.equal(d.allocation.excluded.inUse[0].pid, Number(holder));
  const listen = d.host.sockets.find((s: any) => s.state === 'LISTEN');
  assert.ok(listen, JSON.stringify(d.host.sockets));
  assert.equal(listen.owners[0].pid, Number(holder));
  assert.match(listen.holder, new RegExp(`pid ${holder} \\(node\\) LISTEN`));
  assert.deepEqual(d.host.ephemeral, { lo: 32768, hi: 60999 });
});

test('early death: exit 70 at once, not at the deadline; its stderr is in the bundle after cleanup', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const r = await netnsSh({}, box, `
${timed('RC', `${berthSh} run --port ${P} --ready-timeout 60s --ready http://127.0.0.1:{port}/ -- ${serviceSh} --fail-first 3`)}
${countLeases}
`);
  const v = kv(r.stdout);
  assert.equal(v.get('RC'), '70', r.stdout + r.stderr);
  assert.ok(Number(v.get('RC_MS')) < 5_000, `took ${v.get('RC_MS')} ms with a 60 s deadline`);
  assert.match(r.stderr, /service: fatal: cannot load model weights/, 'stderr streamed through');
  assert.match(r.stderr, /the service exited with status 3 before it was ready/);
  assert.equal(v.get('LEASES'), '0', 'lease released');
  // Default bundle location: a private folder under the state directory, printed in the message.
  const dir = /diagnostics: (\S+)/.exec(r.stderr)?.[1];
  assert.ok(dir && dir.startsWith(join(box.dir, 'state', 'runs')), r.stderr);
  assert.equal(readFileSync(join(dir, 'stderr.log'), 'utf8'), 'service: fatal: cannot load model weights (exit 3)\n');
  const d = readJson(join(dir, 'diagnostics.json'));
  assert.equal(d.exitCode, 70);
  assert.equal(d.child.exit.code, 3);
  assert.equal(d.logs.stderr.bytes, 51);
  assert.equal(d.lease.port, P);
  assert.ok(d.timings.childExitMs > 0 && d.timings.failedMs >= d.timings.childExitMs);
});

test('stolen port: a stranger binds in the release window: exit 69 naming it, never ready', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  const diag = join(box.dir, 'diag');
  t.after(() => box.cleanup());
  const r = await netnsSh({}, box, `
${q(NODE)} ${q(join(SERVICES, 'stealer.mjs'))} ${P} > "$BERTH_STATE_DIR.stealer" & S=$!
echo "STEALER=$S"
i=0; until grep -q 'stealer ready' "$BERTH_STATE_DIR.stealer" 2>/dev/null || [ $i -ge 500 ]; do sleep 0.01; i=$((i+1)); done
${timed('RC', `${berthSh} run --port ${P} --diag-dir ${q(diag)} --ready http://127.0.0.1:{port}/ -- ${serviceSh} --delay 1500`)}
cat "$BERTH_STATE_DIR.stealer"
${countLeases}
kill $S
`);
  const v = kv(r.stdout);
  const stealer = v.get('STEALER')!;
  assert.equal(v.get('RC'), '69', r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`stole ${P} pid ${stealer}`));
  assert.match(r.stderr, new RegExp(`port ${P} was stolen before the service bound it: pid ${stealer} \\(\\S*node .*stealer\\.mjs ${P}\\) uid \\d+ listening on 0\\.0\\.0\\.0:${P}`));
  assert.doesNotMatch(r.stderr, /ready on/);
  assert.ok(Number(v.get('RC_MS')) < 1_500, `detected in ${v.get('RC_MS')} ms, before the service even tried to bind`);
  assert.equal(v.get('LEASES'), '0');
  const d = readJson(join(diag, 'diagnostics.json'));
  assert.equal(d.phase, 'ownership');
  assert.equal(d.exitCode, 69);
  assert.equal(d.ownership.state, 'foreign');
  const listen = d.host.sockets.find((s: any) => s.state === 'LISTEN');
  assert.equal(listen.owners[0].pid, Number(stealer));
  assert.equal(d.probe.attempts, 0, 'no probe ever ran');
});

test('deadline: exit 75 with the bundle', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  const diag = join(box.dir, 'diag');
  t.after(() => box.cleanup());
  const r = await netnsSh({}, box, `
${timed('RC', `${berthSh} run --port ${P} --ready-timeout 1s --diag-dir ${q(diag)} --ready http://127.0.0.1:{port}/health -- ${serviceSh} --status 503 --host 0.0.0.0`)}
${countLeases}
`);
  const v = kv(r.stdout);
  assert.equal(v.get('RC'), '75', r.stdout + r.stderr);
  assert.ok(Number(v.get('RC_MS')) < 5_000);
  assert.match(r.stderr, /not ready after 1\.0s \(--ready-timeout\): the probe http:\/\/127\.0\.0\.1:20000\/health did not succeed \(last: HTTP 503, \d+ attempts\)/);
  assert.match(r.stderr, new RegExp(`diagnostics: ${diag}`));
  assert.match(r.stdout, /got SIGTERM/, 'cleanup stopped the service');
  assert.equal(v.get('LEASES'), '0');
  const d = readJson(join(diag, 'diagnostics.json'));
  assert.equal(d.phase, 'probe');
  assert.equal(d.exitCode, 75);
  assert.equal(d.probe.last.detail, 'HTTP 503');
  assert.equal(d.ownership.state, 'owned');
  assert.ok(existsSync(join(diag, 'stdout.log')));
  assert.match(readFileSync(join(diag, 'stdout.log'), 'utf8'), /listening on/);
});
