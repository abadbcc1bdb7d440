/**
 * Learned ports against `berth run --port learn [--learn REGEX]`, with real servers in network
 * namespaces: Debian's python3 `http.server 0` (one listener: that is the port), a server with
 * two listeners told apart by a pattern, a line that lies (no listener there: never learned),
 * and the lease that makes the learned port every other allocator's "no".
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { requireNetns } from './helpers/netns.js';
import { berthSh, kv, netnsSh, q, readJson, realPython, sandbox, SERVICES, waitFile } from './fixtures/services/launch-harness.js';

const PY = q(realPython());
/** Debian's own python3 for its http.server (the issue names it). */
const DEB_PY = '/usr/bin/python3';
const TWO = `${PY} -u ${q(join(SERVICES, 'learn-two.py'))}`;
const GUARD = '( sleep 60; kill -TERM $B 2>/dev/null ) >/dev/null 2>&1 & G=$!; trap \'kill $G 2>/dev/null\' EXIT';

test('learn: python3 -m http.server 0 is learned, probed, leased (another allocator gets 69 naming the lease), given back at the end', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const ready = join(box.dir, 'ready.json');
  const r = await netnsSh({ ephemeral: '40000 40999' }, box, `
${berthSh} run --port learn --name web --ready http://127.0.0.1:{port}/ --ready-file ${q(ready)} -- ${DEB_PY} -m http.server 0 --bind 127.0.0.1 > /dev/null 2> ${q(join(box.dir, 'err'))} & B=$!
${GUARD}
${waitFile(ready)}
P=$(sed -n 's/.*"port": \\([0-9]*\\).*/\\1/p' ${q(ready)} | head -1)
echo "PORT=$P"
${berthSh} leases --json > ${q(join(box.dir, 'leases.json'))}
${berthSh} port --port $P --allow-ephemeral 2> ${q(join(box.dir, 'other'))}; echo "OTHER=$?"
kill -TERM $B; wait $B; echo "RC=$?"
echo "AFTER=$(grep -c "@berth/v1/p/$P\\b" /proc/net/unix)"
`, 60_000);
  const v = kv(r.stdout);
  const err = (await import('node:fs')).readFileSync(join(box.dir, 'err'), 'utf8');
  const port = Number(v.get('PORT'));
  assert.ok(port >= 40000 && port <= 40999, `the kernel's choice, from this namespace's ephemeral range: ${r.stdout}\n${err}`);
  const info = readJson(ready);
  assert.deepEqual(info.learned, ['port']);
  assert.deepEqual(info.ports, [{ name: 'port', kind: 'single', ports: [port] }]);
  assert.match(err, new RegExp(`berth: web ready on 127\\.0\\.0\\.1:${port} pid \\d+ after \\d+\\.\\d+s \\(learned; ${port} in the ephemeral range\\)`));
  const leases = JSON.parse((await import('node:fs')).readFileSync(join(box.dir, 'leases.json'), 'utf8'));
  const mine = (leases.leases ?? leases).find((l: any) => l.port === port);
  assert.ok(mine, `the learned port is in berth leases: ${JSON.stringify(leases)}`);
  assert.equal(mine.name, 'web/port');
  assert.equal(v.get('OTHER'), '69');
  const other = (await import('node:fs')).readFileSync(join(box.dir, 'other'), 'utf8');
  assert.match(other, /web\/port/, `the refusal names the lease: ${other}`);
  assert.equal(v.get('RC'), '143');
  assert.equal(v.get('AFTER'), '0', 'the lease ends with the service');
});

test('learn: of two listeners, --learn REGEX picks the one its line names; a lying line is never trusted', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const ready = join(box.dir, 'ready.json');
  const r = await netnsSh({}, box, `
${berthSh} run --port learn --learn 'api listening on (\\d+)' --ready http://127.0.0.1:{port}/ --ready-file ${q(ready)} -- ${TWO} > ${q(join(box.dir, 'out'))} 2> ${q(join(box.dir, 'err'))} & B=$!
${GUARD}
${waitFile(ready)}
echo "API=$(sed -n 's/^api listening on //p' ${q(join(box.dir, 'out'))})"
kill -TERM $B; wait $B; echo "RC=$?"
${berthSh} run --port learn --learn 'api listening on (\\d+)' --ready-timeout 3s -- ${TWO} --lie 1 > /dev/null 2> ${q(join(box.dir, 'lie'))}; echo "LIE=$?"
${berthSh} run --port learn --ready-timeout 8s -- ${TWO} > /dev/null 2> ${q(join(box.dir, 'bare'))}; echo "BARE=$?"
`, 60_000);
  const v = kv(r.stdout);
  const fs = await import('node:fs');
  assert.equal(readJson(ready).port, Number(v.get('API')), `the api port, not the admin one: ${fs.readFileSync(join(box.dir, 'err'), 'utf8')}`);
  assert.equal(v.get('RC'), '143');
  const lie = fs.readFileSync(join(box.dir, 'lie'), 'utf8');
  assert.equal(v.get('LIE'), '75', lie);
  assert.match(lie, /no learned port: "port": lines gave 1, but its tree does not listen there \(it listens on \d+, \d+\)/);
  assert.match(lie, /"port" matched 1 line\(s\), the last: "api listening on 1"/);
  const bare = fs.readFileSync(join(box.dir, 'bare'), 'utf8');
  assert.equal(v.get('BARE'), '75', bare);
  // Said at once (not only at the deadline), naming both listeners and the fix.
  assert.match(bare, /warning: python3: port not learned yet: "port": its tree listens on 2 ports \(\d+, \d+\), and without a pattern berth cannot tell which is "port": .*--learn REGEX/);
});

test('learn: {port} in the command is refused (64) before anything starts; --learn without --port learn, and a pattern without a group, too', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const r = await netnsSh({}, box, `
${berthSh} run --port learn -- ${PY} -m http.server {port} 2> ${q(join(box.dir, 'a'))}; echo "A=$?"
${berthSh} run --learn 'on (\\d+)' -- ${PY} -m http.server 0 2> ${q(join(box.dir, 'b'))}; echo "B=$?"
${berthSh} run --port learn --learn 'on \\d+' -- ${PY} -m http.server 0 2> ${q(join(box.dir, 'c'))}; echo "C=$?"
${berthSh} run --port learn --range 20000-20010 -- ${PY} -m http.server 0 2> ${q(join(box.dir, 'd'))}; echo "D=$?"
echo "LEASES=$(grep -c '@berth/v1/p/' /proc/net/unix)"
`, 60_000);
  const v = kv(r.stdout);
  const fs = await import('node:fs');
  const text = (f: string) => fs.readFileSync(join(box.dir, f), 'utf8');
  for (const k of ['A', 'B', 'C', 'D']) assert.equal(v.get(k), '64', `${k}: ${text(k.toLowerCase())}`);
  assert.match(text('a'), /command word 4 names \{port\}, a port the service chooses itself \(learn\)/);
  assert.match(text('b'), /give --port learn with it/);
  assert.match(text('c'), /has no group: put the port in parentheses/);
  assert.match(text('d'), /--port learn: the service chooses its port, so --range has nothing to give it/);
  assert.equal(v.get('LEASES'), '0');
});
