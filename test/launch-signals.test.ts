/**
 * Supervision: berth forwards SIGTERM/SIGINT/SIGHUP to the service's process group, exits
 * with the service's own status (128+N when a signal killed it), escalates to SIGKILL after
 * the grace when the service ignores SIGTERM, and leaves no lease and no process behind.
 * A signal before the service is ready is an orderly stop, as in `berth up`: exit 128+N.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { requireNetns } from './helpers/netns.js';
import { waitGone } from './helpers/procs.js';
import { berthSh, countLeases, kv, netnsSh, q, runningFn, sandbox, serviceSh, waitFile } from './fixtures/services/launch-harness.js';

/** Shell: wait (at most ~20 s, polling) until FILE has at least N lines matching the fixed string. */
function waitLines(file: string, text: string, n: number): string {
  return `i=0; until [ "$(grep -cF ${q(text)} ${file} 2>/dev/null)" -ge ${n} ] || [ $i -ge 1000 ]; do sleep 0.02; i=$((i+1)); done`;
}

/**
 * Shell: wait until berth (pid $B) catches SIGHUP, which Node does not by default: berth's
 * main armed its early handlers (INT, TERM and HUP together), before its command's bundle loaded.
 */
const waitArmed = `i=0; until [ $(( 0x$(sed -n 's/^SigCgt:[[:space:]]*//p' /proc/$B/status 2>/dev/null || echo 0) & 1 )) -ne 0 ] || [ $i -ge 1000 ]; do sleep 0.01; i=$((i+1)); done`;

/** Start berth in the background with a ready file, wait for it, run `then`, wait for berth. */
function scenario(rf: string, berthArgs: string, serviceArgs: string, then: string): string {
  return `
${runningFn}
OUT=${q(rf)}.out
${berthSh} run ${berthArgs} --ready-file ${q(rf)} --ready http://127.0.0.1:{port}/ -- ${serviceSh} ${serviceArgs} > "$OUT" & B=$!
${waitFile(rf)}
pid=$(sed -n 's/.*"pid": \\([0-9]*\\).*/\\1/p' ${q(rf)})
${then}
wait $B
echo "RC=$?"
cat "$OUT"
echo "SERVICE_LEFT=$(running $pid && echo yes || echo no)"
${countLeases}
`;
}

test('SIGTERM to berth reaches the service; berth exits with its status; no lease is left', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const rf = join(box.dir, 'ready.json');
  const r = await netnsSh({}, box, scenario(rf, '--port 20000', '--on-term 7', 'echo "LEASES_WHILE_RUNNING=$(grep -c @berth/v1/p/ /proc/net/unix)"; kill -TERM $B'));
  const v = kv(r.stdout);
  assert.match(r.stdout, /got SIGTERM/, r.stdout + r.stderr);
  assert.equal(v.get('RC'), '7');
  assert.equal(v.get('LEASES_WHILE_RUNNING'), '1');
  assert.equal(v.get('LEASES'), '0');
  assert.equal(v.get('SERVICE_LEFT'), 'no');
});

test('SIGHUP is passed on and the service keeps running; SIGINT then ends it with 128+2', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const rf = join(box.dir, 'ready.json');
  const r = await netnsSh({}, box, scenario(rf, '--port 20000', '', `kill -HUP $B
${waitLines('"$OUT"', 'got SIGHUP', 1)}
kill -HUP $B
${waitLines('"$OUT"', 'got SIGHUP', 2)}
echo "TERM_BEFORE_INT=$(grep -c 'got SIGTERM' "$OUT")"
echo "ALIVE_AFTER_HUP=$(running $pid && echo yes || echo no)"
kill -INT $B`));
  const v = kv(r.stdout);
  assert.equal(r.stdout.match(/got SIGHUP/g)?.length, 2, r.stdout + r.stderr);
  // A second SIGHUP passed on proves berth still supervises: had the first been a stop, the
  // service's "got SIGTERM" would have come before the second "got SIGHUP".
  assert.equal(v.get('TERM_BEFORE_INT'), '0');
  assert.equal(v.get('ALIVE_AFTER_HUP'), 'yes');
  assert.equal(v.get('RC'), '130', 'node dies of SIGINT: 128+2');
  assert.equal(v.get('LEASES'), '0');
  assert.equal(v.get('SERVICE_LEFT'), 'no');
});

test('a service that ignores SIGTERM is killed after --stop-grace: 128+9', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const rf = join(box.dir, 'ready.json');
  const r = await netnsSh({}, box, scenario(rf, '--port 20000 --stop-grace 300ms', '--ignore-term', 't0=$(date +%s%N); kill -TERM $B') + 'echo "STOP_MS=$(( ($(date +%s%N) - t0) / 1000000 ))"');
  const v = kv(r.stdout);
  assert.match(r.stdout, /got SIGTERM/);
  assert.equal(v.get('RC'), '137', r.stdout + r.stderr);
  assert.ok(Number(v.get('STOP_MS')) >= 300 && Number(v.get('STOP_MS')) < 5_000, v.get('STOP_MS'));
  assert.equal(v.get('SERVICE_LEFT'), 'no');
  assert.equal(v.get('LEASES'), '0');
});

// Two moments before ready: as soon as berth takes signals (its bundle still loading, its
// source resolving: a scancel during start-up), and once the service is running but not ready.
const MOMENTS = {
  'as soon as berth takes signals': waitArmed,
  'once the service started': waitLines('"$D/out"', 'started pid', 1),
} as const;

for (const [sig, status] of [
  ['TERM', 143],
  ['INT', 130],
  ['HUP', 129],
] as const) {
  for (const [moment, wait] of Object.entries(MOMENTS)) {
    test(`SIG${sig} before the service is ready (${moment}): orderly stop, exit ${status}, a one-line reason, nothing left`, async (t) => {
      if (!requireNetns(t)) return;
      const box = sandbox();
      t.after(() => box.cleanup());
      const mark = `EARLY_SIGNAL=${randomUUID()}`;
      // The service binds only after 20 s (a loaded machine must still deliver the signal before
      // it is ready), exits 0 on SIGTERM and shrugs off SIGHUP: berth's exit status must come
      // from the signal berth got, not from how the service took it. The guard writes nowhere, so
      // its sleep does not hold the output open.
      const r = await netnsSh(
        {},
        box,
        `D=${q(box.dir)}
env ${mark} ${berthSh} run --port 20000 --stop-grace 2s -- ${serviceSh} --started --delay 20000 --on-term 0 > "$D/out" 2> "$D/err" & B=$!
${wait}
(sleep 25; kill -KILL $B 2>/dev/null) >/dev/null 2>&1 & W=$!
kill -${sig} $B
wait $B
echo "RC=$?"
kill $W 2>/dev/null
echo "ERR_LINES=$(wc -l < "$D/err")"
cat "$D/err"
${countLeases}`,
        60_000,
      );
      const v = kv(r.stdout);
      assert.equal(v.get('RC'), String(status), r.stdout + r.stderr);
      assert.match(r.stdout, new RegExp(`^berth: stopped by SIG${sig} before node was ready; service stopped, exit ${status}$`, 'm'));
      assert.equal(v.get('ERR_LINES'), '1', 'one line, no diagnostics bundle');
      assert.equal(v.get('LEASES'), '0');
      assert.deepEqual((await waitGone(mark, 2_000)).left, []);
    });
  }
}
