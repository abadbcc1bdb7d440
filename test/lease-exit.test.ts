/**
 * When `berth run` or `berth up` has exited, every lease name it held is gone from the
 * namespace (docs/leases.md): its watchdog held copies of the lease sockets and berth waits
 * for it to say it closed them. Checked at once after berth exits, with no wait, in a loop,
 * on every way a run ends: the service exits 0, fails before it is ready (70), is not ready
 * in time (75), berth is sent SIGTERM (143). The next line of a batch script, an allocator
 * or `ss -xl`, finds none of them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireNetns } from './helpers/netns.js';
import { berthSh, kv, netnsSh, q, sandbox, serviceSh, SERVICES, NODE, waitFile } from './fixtures/services/launch-harness.js';

const RANGE = '20000-20099';

/** Shell snippet: print KEY=<berth/v1/ names in the namespace>, and the names themselves when there are any. */
const names = (key: string) =>
  `n=$(grep -c '@berth/v1/' /proc/net/unix); echo "${key}=$n"; [ "$n" = 0 ] || grep -o '@berth/v1/[^ ]*' /proc/net/unix | sed 's/@*$//; s/^/LEFT: /'`;

test('berth run: once it has exited, none of its lease names is left (20 runs, every way of ending, checked with no wait)', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const rf = join(box.dir, 'ready.json');
  const run = `${berthSh} run --range ${RANGE} --ports http,grpc --ready http://127.0.0.1:{port}/`;
  const r = await netnsSh({}, box, `
for k in $(seq 0 19); do
  case $((k % 4)) in
    0) ${run} -- ${serviceSh} --exit-after-served 20 >/dev/null 2>&1; rc=$? ;;
    1) ${run} -- ${serviceSh} --fail-first 3 >/dev/null 2>&1; rc=$? ;;
    2) ${run} --ready-timeout 0.3s -- ${serviceSh} --status 503 >/dev/null 2>&1; rc=$? ;;
    3) rm -f ${q(rf)}; ${run} --ready-file ${q(rf)} -- ${serviceSh} >/dev/null 2>&1 & B=$!
       ${waitFile(rf)}; kill -TERM $B; wait $B; rc=$? ;;
  esac
  ${names('LEFT_$k')}
  echo "RC_$k=$rc"
done
`, 120_000);
  const v = kv(r.stdout);
  const expected = ['0', '70', '75', '143'];
  for (let i = 0; i < 20; i++) {
    assert.equal(v.get(`RC_${i}`), expected[i % 4], `run ${i}: exit status\n${r.stdout}${r.stderr}`);
    assert.equal(v.get(`LEFT_${i}`), '0', `run ${i} (exit ${expected[i % 4]}): lease names still there when berth had exited\n${r.stdout}`);
  }
});

test('berth up: once it has exited (SIGTERM, or its job ended), none of its lease names is left (checked with no wait)', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const service = [NODE, join(SERVICES, 'service.mjs')].map((s) => JSON.stringify(s)).join(', ');
  const served = join(box.dir, 'served.yaml');
  writeFileSync(served, `services:\n  web:\n    replicas: 2\n    range: ${RANGE}\n    ports: { http: 1, dist: { block: 4 } }\n    command: [${service}, --port, "{ports.http}"]\n    ready: http://127.0.0.1:{port}/\n`);
  const job = join(box.dir, 'job.yaml');
  writeFileSync(job, `services:\n  web:\n    range: 20000-20049\n    command: [${service}]\n    ready: http://127.0.0.1:{port}/\n  client:\n    range: 20050-20099\n    command: [${service}, --exit-after-served, "20"]\n    ready: http://127.0.0.1:{port}/\n    depends_on: { web: ready }\n    job: true\n`);
  const out = join(box.dir, 'up.out');
  const r = await netnsSh({}, box, `
for k in $(seq 0 5); do
  rm -rf ${q(box.dir)}/run
  if [ $((k % 2)) = 0 ]; then
    ${berthSh} up ${q(served)} --run-dir ${q(box.dir)}/run > ${q(out)} 2>&1 & B=$!
    j=0; until grep -q 'stack ready' ${q(out)} || [ $j -ge 2000 ]; do sleep 0.01; j=$((j+1)); done
    kill -TERM $B; wait $B; rc=$?
  else
    ${berthSh} up ${q(job)} --run-dir ${q(box.dir)}/run > ${q(out)} 2>&1; rc=$?
  fi
  ${names('LEFT_$k')}
  echo "RC_$k=$rc"
done
`, 120_000);
  const v = kv(r.stdout);
  for (let i = 0; i < 6; i++) {
    const rc = i % 2 === 0 ? '143' : '0';
    assert.equal(v.get(`RC_${i}`), rc, `up ${i}: exit status\n${r.stdout}${r.stderr}`);
    assert.equal(v.get(`LEFT_${i}`), '0', `up ${i} (exit ${rc}): lease names still there when berth up had exited\n${r.stdout}`);
  }
});

test('berth run with an unresponsive watchdog (SIGSTOPped): berth waits at most about 1 s for its answer, kills it, and still leaves no lease name', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const rf = join(box.dir, 'ready.json');
  const r = await netnsSh({}, box, `
${berthSh} run --range ${RANGE} --ready-file ${q(rf)} -- ${serviceSh} > /dev/null 2>&1 & B=$!
${waitFile(rf)}
W=; for f in /proc/[0-9]*; do
  [ "$(sed 's/.*) //' $f/stat 2>/dev/null | cut -d' ' -f2)" = "$B" ] && tr '\\0' ' ' < $f/cmdline 2>/dev/null | grep -q watchdog && W=\${f#/proc/}
done
echo "WATCHDOG=$W"
kill -STOP $W
t0=$(date +%s%N)
kill -TERM $B; wait $B; rc=$?
echo "EXIT_MS=$(( ($(date +%s%N) - t0) / 1000000 ))"
${names('LEFT')}
echo "RC=$rc"
echo "WATCHDOG_LEFT=$(kill -0 $W 2>/dev/null && echo yes || echo no)"
[ -n "$W" ] && kill -KILL $W 2>/dev/null
`, 60_000);
  const v = kv(r.stdout);
  assert.match(v.get('WATCHDOG') ?? '', /^\d+$/, `berth's watchdog found\n${r.stdout}${r.stderr}`);
  assert.equal(v.get('RC'), '143', r.stdout + r.stderr);
  t.diagnostic(`berth exited ${v.get('EXIT_MS')} ms after SIGTERM, its watchdog stopped`);
  assert.equal(v.get('LEFT'), '0', `lease names left behind a stopped watchdog\n${r.stdout}`);
  assert.equal(v.get('WATCHDOG_LEFT'), 'no', 'the unresponsive watchdog was killed');
  // The service's own stop, then the 1 s wait: never the service's 10 s grace, never forever.
  assert.ok(Number(v.get('EXIT_MS')) < 5_000, `berth exited ${v.get('EXIT_MS')} ms after SIGTERM`);
});
