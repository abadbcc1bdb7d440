/**
 * Foreign listeners against `berth run`, with real processes in network namespaces: a second
 * python3 server of the same uid joins the service's listener through SO_REUSEPORT (the kernel
 * then splits connections between them), or listens on the other family's loopback. After
 * ready: one warning and a "foreign" event naming it; with --strict exit 70; at readiness:
 * not ready, exit 69, diagnostics kept.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { requireNetns } from './helpers/netns.js';
import { berthSh, kv, netnsSh, q, realPython, sandbox, SERVICES, waitFile } from './fixtures/services/launch-harness.js';

const SRV = `${q(realPython())} -S ${q(join(SERVICES, 'reuseport.py'))}`;
/** Shell: wait (up to ~60 s) until file F has a line matching the extended regex RE. */
const waitGrep = (re: string, f: string) => `i=0; until grep -Eq ${q(re)} ${q(f)} 2>/dev/null || [ $i -ge 6000 ]; do sleep 0.01; i=$((i+1)); done`;

/** Shell: a test that fails must not leave berth behind (`wait $B` on a berth that never ends): TERM it after 75 s. */
const GUARD = '( sleep 75; kill -TERM $B 2>/dev/null ) >/dev/null 2>&1 & G=$!; trap \'kill $G 2>/dev/null; kill $S 2>/dev/null\' EXIT; S=';

function jsonLines(text: string): any[] {
  return text.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
}

/** berth run in the background until ready, then a stranger on ADDR:port; prints SPID, PORT and berth's RC. */
function afterReady(box: { dir: string }, flags: string, strangerHost: string, endWith: string): string {
  const err = join(box.dir, 'err');
  const ready = join(box.dir, 'ready.json');
  return `
${berthSh} run --range 22000-22010 --ready tcp --json --ready-file ${q(ready)} ${flags} -- ${SRV} 127.0.0.1 {port} 2> ${q(err)} > /dev/null & B=$!
${GUARD}
${waitFile(ready)}
P=$(sed -n 's/.*"port": \\([0-9]*\\).*/\\1/p' ${q(ready)} | head -1)
echo "PORT=$P"
${SRV} ${strangerHost} $P > /dev/null & S=$!
echo "SPID=$S"
${endWith}
echo "RC=$?"
kill $S 2>/dev/null
cat ${q(err)} >&2
`;
}

test('foreign: a SO_REUSEPORT stranger joining a ready berth run is one warning and one "foreign" event naming it', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const err = join(box.dir, 'err');
  const r = await netnsSh({}, box, afterReady(box, '--name web', '127.0.0.1', `${waitGrep('"event":"foreign"', err)}\nsleep 7\nkill -TERM $B; wait $B`), 90_000);
  const v = kv(r.stdout);
  const lines = jsonLines(r.stderr);
  const foreign = lines.filter((e) => e.event === 'foreign');
  assert.equal(foreign.length, 1, `one report over several audit turns:\n${r.stderr}`);
  const f = foreign[0].listeners[0];
  assert.equal(foreign[0].listeners.length, 1);
  assert.equal(f.pid, Number(v.get('SPID')));
  assert.equal(f.port, Number(v.get('PORT')));
  assert.equal(f.address, '127.0.0.1');
  assert.equal(f.reuseport, true);
  assert.equal(f.uid, process.getuid!());
  assert.match(f.command, /reuseport\.py 127\.0\.0\.1/);
  const warnings = lines.filter((e) => e.event === 'warning' && /outside the service's process tree/.test(e.message));
  assert.equal(warnings.length, 1, r.stderr);
  assert.match(warnings[0].message, new RegExp(`^web: port ${v.get('PORT')} has a listener outside the service's process tree: pid ${v.get('SPID')} \\(.*reuseport\\.py 127\\.0\\.0\\.1 ${v.get('PORT')}\\) uid \\d+ listening on 127\\.0\\.0\\.1:${v.get('PORT')}, and shares the listener through SO_REUSEPORT`));
  // Not strict: the service keeps running until asked to stop.
  assert.equal(v.get('RC'), '143');
});

test('foreign: with --strict the same stranger stops the service: exit 70, diagnostics kept', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const r = await netnsSh({}, box, afterReady(box, '--strict --name web', '127.0.0.1', 'wait $B'), 90_000);
  const v = kv(r.stdout);
  assert.equal(v.get('RC'), '70', r.stderr);
  assert.match(r.stderr, new RegExp(`pid ${v.get('SPID')} .* shares the listener through SO_REUSEPORT.*; failing the service \\(strict\\)`));
  const dir = /diagnostics: (\S+) \(diagnostics\.json/.exec(r.stderr)?.[1];
  assert.ok(dir && existsSync(join(dir, 'diagnostics.json')), r.stderr);
});

test('foreign: a listener on the other family\'s loopback ([::1]:P beside 127.0.0.1:P) is foreign, not SO_REUSEPORT', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const err = join(box.dir, 'err');
  const r = await netnsSh({}, box, afterReady(box, '--name web', '::1', `${waitGrep('"event":"foreign"', err)}\nkill -TERM $B; wait $B`), 90_000);
  const v = kv(r.stdout);
  const f = jsonLines(r.stderr).find((e) => e.event === 'foreign')?.listeners[0];
  assert.ok(f, r.stderr);
  assert.equal(f.pid, Number(v.get('SPID')));
  assert.equal(f.family, 6);
  assert.equal(f.address, '::1');
  assert.equal(f.reuseport, false);
  assert.match(f.message, new RegExp(`listening on \\[::1\\]:${v.get('PORT')}$`));
});

test('foreign: a stranger that joins after ownership but before the probe succeeds: not ready, exit 69 naming it, diagnostics kept', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const probed = join(box.dir, 'probed');
  const flag = join(box.dir, 'flag');
  const out = join(box.dir, 'out');
  // The probe runs only once the tree owns the port: then the stranger joins, then the probe passes.
  const r = await netnsSh({}, box, `
${berthSh} run --range 22000-22010 --name web --ready ${q(`cmd:touch ${probed}; test -f ${flag}`)} -- ${SRV} 127.0.0.1 {port} > ${q(out)} & B=$!
${GUARD}
${waitFile(probed)}
P=$(sed -n 's/^listening 127.0.0.1:\\([0-9]*\\).*/\\1/p' ${q(out)})
echo "PORT=$P"
${SRV} 127.0.0.1 $P > /dev/null & S=$!
echo "SPID=$S"
i=0; until grep -q "^listening" /proc/$S/fd/1 2>/dev/null || [ $i -ge 200 ]; do sleep 0.01; i=$((i+1)); done
sleep 0.3
touch ${q(flag)}
wait $B
echo "RC=$?"
kill $S
`, 90_000);
  const v = kv(r.stdout);
  assert.equal(v.get('RC'), '69', r.stderr);
  assert.match(r.stderr, new RegExp(`web: port ${v.get('PORT')} has a listener outside the service's process tree: pid ${v.get('SPID')} \\(.*\\) uid \\d+ listening on 127\\.0\\.0\\.1:${v.get('PORT')}, and shares the listener through SO_REUSEPORT.*; not ready`));
  const dir = /diagnostics: (\S+) \(diagnostics\.json/.exec(r.stderr)?.[1];
  assert.ok(dir && existsSync(join(dir, 'diagnostics.json')), r.stderr);
});

test('elsewhere: a service that listens, but not on its port, is told so once after a few seconds, long before its ready timeout', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const err = join(box.dir, 'err');
  const r = await netnsSh({}, box, `
t0=$(date +%s%N)
${berthSh} run --range 22000-22010 --ready-timeout 10m --name uv -- ${q(realPython())} -S ${q(join(SERVICES, 'listen-ports.py'))} 18000 18001 2> ${q(err)} > /dev/null & B=$!
${waitGrep('has listened on', err)}
echo "SAID_MS=$(( ($(date +%s%N) - t0) / 1000000 ))"
sleep 3
kill -TERM $B; wait $B
echo "RC=$?"
cat ${q(err)} >&2
`, 90_000);
  const v = kv(r.stdout);
  const said = r.stderr.split('\n').filter((l) => l.includes('has listened on'));
  assert.equal(said.length, 1, r.stderr);
  assert.match(said[0]!, /^berth: warning: uv: has listened on 18000 and 18001 for [3-9]s, but not on its port 220(0\d|10), which berth waits for \(up to its ready timeout, 10m\): pass the port to it \(\{port\} in its command, \$PORT, or the program's flag for its port\), or, if it picks its own port, declare it learned \(port: learn\)$/);
  assert.ok(Number(v.get('SAID_MS')) < 30_000, `said after ${v.get('SAID_MS')} ms`);
  assert.equal(v.get('RC'), '143', r.stderr);
});
