/**
 * `berth run` with every socket read through `ss` (BERTH_SOCKET_READER=ss, as on a busy node):
 * readiness, ownership and the stolen-port check work through sock_diag, and the asynchronous
 * reads are started by berth's one shell (src/host/ss-shell.ts), not forked from berth itself.
 * An `ss` wrapper first on PATH records who started each read.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { berthSh, countLeases, kv, netnsSh, q, sandbox, serviceSh, SERVICES, NODE, timed } from './fixtures/services/launch-harness.js';

const P = 20050;

function ssWrapper(dir: string): { env: string; log: string } {
  const log = join(dir, 'ss-parents.log');
  const bin = join(dir, 'bin');
  const real = ['/usr/bin/ss', '/bin/ss', '/usr/sbin/ss', '/sbin/ss'].find((p) => {
    try {
      return readFileSync(p).length > 0;
    } catch {
      return false;
    }
  });
  assert.ok(real, 'ss (iproute2) is installed');
  const script = `#!/bin/sh\necho "$PPID" >> ${q(log)}\nexec ${q(real)} "$@"\n`;
  return { env: `mkdir -p ${q(bin)} && printf '%s' ${q(script)} > ${q(join(bin, 'ss'))} && chmod +x ${q(join(bin, 'ss'))} && export PATH=${q(bin)}:"$PATH" BERTH_SOCKET_READER=ss`, log };
}

test('with ss for every read: ready, owned, stopped; the polls are started by one shell, not by berth', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const w = ssWrapper(box.dir);
  const rf = join(box.dir, 'ready.json');
  const r = await netnsSh({}, box, `
${w.env}
${berthSh} run --port ${P} --ready-file ${q(rf)} --ready http://127.0.0.1:{port}/ -- ${serviceSh} --delay 300 & B=$!
echo "BERTH=$B"
i=0; while [ ! -s ${q(rf)} ] && [ $i -lt 1500 ]; do sleep 0.01; i=$((i+1)); done
echo "READY=$(test -s ${q(rf)} && echo yes)"
kill -TERM $B; wait $B; echo "RC=$?"
${countLeases}
`);
  const v = kv(r.stdout);
  assert.equal(v.get('READY'), 'yes', r.stdout + r.stderr);
  assert.equal(v.get('RC'), '143', r.stderr);
  assert.equal(v.get('LEASES'), '0');
  const parents = readFileSync(w.log, 'utf8').trim().split('\n').map(Number);
  const berth = Number(v.get('BERTH'));
  const byShell = parents.filter((p) => p !== berth);
  assert.ok(byShell.length >= 1, `the ownership polls ran ss (parents: ${parents.join(',')})`);
  assert.equal(new Set(byShell).size, 1, `one shell started every read berth did not: ${parents.join(',')}`);
  // berth's own spawns are the synchronous reads only (the allocation, before the launch).
  assert.ok(parents.filter((p) => p === berth).length <= 2, `berth forked ss itself only for its synchronous reads: ${parents.join(',')} (berth ${berth})`);
});

test('with ss for every read: a stolen port is still caught and its thief named (exit 69)', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const w = ssWrapper(box.dir);
  const r = await netnsSh({}, box, `
${w.env}
${q(NODE)} ${q(join(SERVICES, 'stealer.mjs'))} ${P} > "$BERTH_STATE_DIR.stealer" & S=$!
echo "STEALER=$S"
i=0; until grep -q 'stealer ready' "$BERTH_STATE_DIR.stealer" 2>/dev/null || [ $i -ge 500 ]; do sleep 0.01; i=$((i+1)); done
${timed('RC', `${berthSh} run --port ${P} --ready http://127.0.0.1:{port}/ -- ${serviceSh} --delay 1500`)}
${countLeases}
kill $S
`);
  const v = kv(r.stdout);
  assert.equal(v.get('RC'), '69', r.stdout + r.stderr);
  assert.match(r.stderr, new RegExp(`port ${P} was stolen before the service bound it: pid ${v.get('STEALER')} `));
  assert.equal(v.get('LEASES'), '0');
  assert.ok(readFileSync(w.log, 'utf8').trim().split('\n').length >= 1, 'the reads went through ss');
});
