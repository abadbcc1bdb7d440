/**
 * The production failure berth exists for, reproduced and then fixed. In a namespace whose
 * ephemeral range is the single port P: a preflight bind-and-release says P is free, a
 * readiness probe started before the service binds takes P as its own source port,
 * connects to itself and leaves TIME_WAIT, and the service then dies with EADDRINUSE.
 * With `berth run --port P --allow-ephemeral` (range widened by one port so any probe has
 * a source port at all) the same late-binding service comes up every time, both handoffs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requireNetns } from './helpers/netns.js';
import { berthSh, kv, netnsSh, q, sandbox, serviceSh, NODE } from './fixtures/services/launch-harness.js';

const P = 20000;

const naiveProbe = `
const net = require('node:net');
const P = ${P};
// 1. preflight: bind and release P ("it is free")
const pre = net.createServer().listen(P, '0.0.0.0', () => pre.close(() => {
  // 2. the readiness probe starts before the service binds
  const c = net.connect({ port: P, host: '127.0.0.1' }, () => {
    console.log('PROBE_CONNECTED=yes');
    console.log('PROBE_SOURCE=' + c.localPort);
    c.destroy();
  });
  c.on('error', (e) => { console.log('PROBE_CONNECTED=' + e.code); });
}));
`;

test('control: a probe before the bind takes P as its source port and the service then fails with EADDRINUSE', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const r = await netnsSh({ ephemeral: `${P} ${P}` }, box, `
${q(NODE)} -e ${q(naiveProbe)}
echo "TIME_WAIT_ON_P=$(grep -c ':4E20 .* 06 ' /proc/net/tcp)"
${serviceSh} --port ${P} --host 0.0.0.0; echo "SERVICE_EXIT=$?"
`);
  const v = kv(r.stdout);
  assert.equal(v.get('PROBE_CONNECTED'), 'yes', r.stdout + r.stderr);
  assert.equal(v.get('PROBE_SOURCE'), String(P), 'the probe connected from P to P (to itself)');
  assert.notEqual(v.get('TIME_WAIT_ON_P'), '0', 'the self-connection left TIME_WAIT on P');
  assert.equal(v.get('SERVICE_EXIT'), '98', r.stdout + r.stderr);
  assert.match(r.stderr, /listen failed: EADDRINUSE/);
});

test('fix: berth run --port P --allow-ephemeral brings a late-binding service up, 3 times in a row, both handoffs', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const r = await netnsSh({ ephemeral: `${P} ${P + 1}` }, box, `
for i in 1 2 3; do
  for h in release fd; do
    if [ $h = fd ]; then listen=--fd; else listen="--host 0.0.0.0"; fi
    ${berthSh} run --port ${P} --allow-ephemeral --handoff $h --ready http://127.0.0.1:{port}/ -- \\
      ${serviceSh} --delay 250 --exit-after-served 20 $listen
    rc=$?
    echo "RUN_\${i}_$(echo $h | tr a-z A-Z)=$rc"
  done
done
`, 60_000);
  const v = kv(r.stdout);
  for (const i of [1, 2, 3]) {
    for (const h of ['release', 'fd']) assert.equal(v.get(`RUN_${i}_${h.toUpperCase()}`), '0', `run ${i} ${h}:\n${r.stdout}\n${r.stderr}`);
  }
  const ready = r.stderr.match(/ready on 127\.0\.0\.1:20000 pid \d+ after/g) ?? [];
  assert.equal(ready.length, 6, r.stderr);
  assert.doesNotMatch(r.stderr, /EADDRINUSE/);
});
