/**
 * --handoff fd: the held socket is the service's fd 3 from its first instruction. The port
 * is LISTEN before the service runs, the service sees the systemd variables with its own pid,
 * gets the socket in blocking mode (a plain Python accept() loop works), a connection made
 * before it calls accept() waits in the backlog and is served, and no descriptor berth opened
 * reaches it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireNetns } from './helpers/netns.js';
import { berthSh, kv, netnsSh, q, readJson, realPython, sandbox, SERVICES, NODE, waitFile } from './fixtures/services/launch-harness.js';

const P = 20000;

/** "lrwx------ 1 root root 64 Nov 29 23:05 3 -> socket:[407439]" lines → fd → target */
function fdTable(ls: string): Map<number, string> {
  const m = new Map<number, string>();
  for (const line of ls.split('\n')) {
    const x = / (\d+) -> (.*)$/.exec(line);
    if (x) m.set(Number(x[1]), x[2]!);
  }
  return m;
}

test('fd handoff: LISTEN before the service starts, correct LISTEN_*, blocking, early connection served, no stray fds', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  const out = join(box.dir, 'out.txt');
  const rf = join(box.dir, 'ready.json');
  const client = `
const net = require('node:net'), fs = require('node:fs');
const c = net.connect(${P}, '127.0.0.1', () => {
  // The service sleeps before its first accept(): this connection waits in the backlog.
  console.log('PRE_ACCEPT=' + !fs.readFileSync(${JSON.stringify(out)}, 'utf8').includes('fd-server accepting'));
  c.write('GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n');
});
let d = '';
c.on('data', (x) => (d += x));
c.on('end', () => console.log('REPLY=' + JSON.stringify(d.split('\\r\\n\\r\\n')[1])));
c.on('error', (e) => console.log('REPLY=' + e.code));
`;
  t.after(() => box.cleanup());
  const r = await netnsSh({}, box, `
${berthSh} run --port ${P} --handoff fd --name web --ready-file ${q(rf)} -- ${q(realPython())} -S ${q(join(SERVICES, 'fd-server.py'))} 1.0 > ${q(out)} & B=$!
${waitFile(rf)}
pid=$(sed -n 's/.*"pid": \\([0-9]*\\).*/\\1/p' ${q(rf)})
# The service has finished its own start-up (its report is out) before its fds are listed.
i=0; until grep -q '^fd-server {' ${q(out)} || [ $i -ge 500 ]; do sleep 0.01; i=$((i+1)); done
echo "CHILD_FDS_BEGIN"; ls -l /proc/$pid/fd; echo "CHILD_FDS_END"
echo "SHELL_FDS_BEGIN"; ls -l /proc/$$/fd; echo "SHELL_FDS_END"
${q(NODE)} -e ${q(client)}
kill -TERM $B
wait $B
echo "RC=$?"
`);
  const v = kv(r.stdout);
  const ready = readJson(rf);
  const text = readFileSync(out, 'utf8');
  const report = JSON.parse(/^fd-server (\{.*\})$/m.exec(text)?.[1] ?? 'null');
  assert.ok(report, text + r.stderr);
  assert.equal(report.pid, ready.pid);
  assert.equal(report.LISTEN_PID, String(report.pid), 'LISTEN_PID is the service\'s own pid');
  assert.equal(report.LISTEN_FDS, '1');
  assert.equal(report.LISTEN_FDNAMES, 'web');
  assert.equal(report.blocking, true, 'fd 3 handed over in blocking mode');
  assert.equal(report.sockname_port, P);
  const inode = /socket:\[(\d+)\]/.exec(report.inode)?.[1];
  assert.ok(inode);
  assert.deepEqual(report.listening_at_start, [inode], 'fd 3 was already LISTEN on P when the service began');
  assert.match(r.stderr, new RegExp(`berth: web ready on 127\\.0\\.0\\.1:${P} pid ${report.pid} after \\d+\\.\\d\\ds`));
  assert.equal(v.get('PRE_ACCEPT'), 'true');
  assert.equal(v.get('REPLY'), JSON.stringify('served by fd-server\n'));
  // Descriptors: 0-2, the socket as 3, and only what berth itself inherited from this shell
  // (python -S: no site hooks opening files of their own).
  const child = fdTable(/CHILD_FDS_BEGIN\n([\s\S]*?)CHILD_FDS_END/.exec(r.stdout)![1]!);
  const shell = fdTable(/SHELL_FDS_BEGIN\n([\s\S]*?)SHELL_FDS_END/.exec(r.stdout)![1]!);
  assert.equal(child.get(3), `socket:[${inode}]`);
  for (const fd of [0, 1, 2]) assert.ok(child.has(fd));
  for (const [fd, target] of child) {
    if (fd <= 3) continue;
    assert.equal(shell.get(fd), target, `child fd ${fd} -> ${target} did not come from berth's parent: berth leaked it`);
  }
  assert.equal(v.get('RC'), '143', 'SIGTERM forwarded; the service died of it; berth exits 128+15');
});

test('fd handoff refuses --ready tcp with a usage error that says why', async () => {
  const { spawnSync } = await import('node:child_process');
  const { BERTH } = await import('./fixtures/services/launch-harness.js');
  const r = spawnSync(NODE, [BERTH, 'run', '--handoff', 'fd', '--ready', 'tcp', '--', 'true'], { encoding: 'utf8' });
  assert.equal(r.status, 64);
  assert.match(r.stderr, /--ready tcp cannot work with --handoff fd: .*backlog before the service calls accept\(\)/s);
});
