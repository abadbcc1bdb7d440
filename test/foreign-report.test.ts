/**
 * doctor and inspect show a port with listeners of more than one process as such, with every
 * pid (issue 28.2): pure on fixture rows (one socket shared across fork() is one listener;
 * v4 and v6 sockets of one process are one), then real python3 servers in a network namespace
 * (two in one SO_REUSEPORT group, one on the other family's loopback) through the CLI.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import type { SocketRow } from '../src/host/host-map.js';
import { sharedListenerFindings } from '../src/report/shared-listeners.js';
import { requireNetns } from './helpers/netns.js';
import { berthSh, kv, netnsSh, q, realPython, sandbox, SERVICES } from './fixtures/services/launch-harness.js';

const row = (family: 4 | 6, localAddress: string, inode: number, pids: number[]): SocketRow & { owners: { pid: number; comm: string; cmdline: string[] }[] } => ({
  family, localAddress, localPort: 8000, remoteAddress: '0.0.0.0', remotePort: 0, state: 'LISTEN', uid: 0, inode,
  owners: pids.map((pid) => ({ pid, comm: 'srv', cmdline: ['srv', String(pid)] })),
});

test('shared listeners: a fork-shared socket or one process\'s v4+v6 pair is not flagged; two processes are, with every pid', () => {
  assert.deepEqual(sharedListenerFindings([row(4, '0.0.0.0', 1, [10, 11, 12])]), [], 'master and workers of one socket');
  assert.deepEqual(sharedListenerFindings([row(4, '0.0.0.0', 1, [10]), row(6, '::', 2, [10])]), [], 'one process, both families');
  const f = sharedListenerFindings([row(4, '127.0.0.1', 1, [10]), row(4, '127.0.0.1', 2, [20]), row(6, '::1', 3, [30])]);
  assert.equal(f.length, 1);
  assert.equal(f[0]!.code, 'port-shared-listeners');
  assert.equal(f[0]!.message, 'port 8000 has listeners of 3 processes: pid 10 (srv 10) on 127.0.0.1; pid 20 (srv 20) on 127.0.0.1; pid 30 (srv 30) on [::1]; sockets on the same address share it through SO_REUSEPORT: the kernel splits new connections between them');
  const hidden = sharedListenerFindings([row(4, '127.0.0.1', 1, [10]), { ...row(6, '::1', 2, []), uid: 1001 }]);
  assert.match(hidden[0]!.message, /pid 10 \(srv 10\) on 127\.0\.0\.1; uid 1001 \(process not visible\) on \[::1\]$/);
});

test('inspect and doctor: three real servers on one port (a SO_REUSEPORT pair and [::1]) are shown with every pid', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const srv = `${q(realPython())} -S ${q(join(SERVICES, 'reuseport.py'))}`;
  const r = await netnsSh({}, box, `
P=24100
${srv} 127.0.0.1 $P > ${q(join(box.dir, 'a'))} & A=$!
${srv} 127.0.0.1 $P > ${q(join(box.dir, 'b'))} & B=$!
${srv} ::1 $P > ${q(join(box.dir, 'c'))} & C=$!
for f in a b c; do i=0; until [ -s ${q(box.dir)}/$f ] || [ $i -ge 1000 ]; do sleep 0.01; i=$((i+1)); done; done
echo "PIDS=$A $B $C"
${berthSh} inspect --port $P > ${q(join(box.dir, 'inspect'))}; echo "INSPECT=$?"
${berthSh} doctor --range $P-$P --json > ${q(join(box.dir, 'doctor'))}; echo "DOCTOR=$?"
kill $A $B $C
cat ${q(join(box.dir, 'inspect'))}
echo "JSON=$(tr -d '\\n' < ${q(join(box.dir, 'doctor'))})"
`, 60_000);
  const v = kv(r.stdout);
  const pids = v.get('PIDS')!.split(' ');
  assert.equal(v.get('INSPECT'), '0', r.stderr);
  assert.equal(v.get('DOCTOR'), '0', 'a warning, not an error');
  const line = r.stdout.split('\n').find((l) => l.includes('port 24100 has listeners of 3 processes'));
  assert.ok(line, r.stdout);
  for (const p of pids) assert.match(line!, new RegExp(`pid ${p} \\(`));
  assert.match(line!, /on \[::1\]; sockets on the same address share it through SO_REUSEPORT/);
  const doc = JSON.parse(v.get('JSON')!);
  const f = doc.findings.find((x: { code: string }) => x.code === 'port-shared-listeners');
  assert.ok(f, v.get('JSON'));
  for (const p of pids) assert.match(f.message, new RegExp(`pid ${p} `));
});
