/**
 * A lying or hanging `ss` (issue 32 item 3). Every read through `ss` has a deadline
 * (SS_DEADLINE_MS), after which its whole process group is killed and the read is /proc's; an
 * answer with a line that does not parse is a failed read too, never "no sockets". In-process
 * on both readers (sync: `berth port`; async: the shell of `up`/`run`, then its own spawn),
 * and end to end with a fake `ss` first on PATH and BERTH_SOCKET_READER=ss forcing it (berth
 * picks `ss` by itself from 10,000 sockets on), in network namespaces of the test's own.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { readSockets, readSocketsAsync, resetSsUnusable, SS_DEADLINE_MS, ssUnusable } from '../src/host/socket-reader.js';
import { requireNetns } from './helpers/netns.js';
import { berthSh, kv, netnsSh, q, realPython, sandbox, waitFile } from './fixtures/services/launch-harness.js';

/** A directory with a fake `ss`: `hang` writes its pid to PIDS and waits in a child `sleep`; `garbage` prints lines no ss prints, exit 0. */
function fakeSs(kind: 'hang' | 'garbage'): { dir: string; ss: string; pids: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), `berth-fake-ss-${kind}-`));
  const ss = join(dir, 'ss');
  const pids = join(dir, 'pids');
  writeFileSync(pids, '');
  const body = kind === 'hang' ? `echo $$ >> ${q(pids)}\nsleep 600\n` : `echo 'Netid State Recv-Q Send-Q Local Address:Port'\necho 'all quiet here'\n`;
  writeFileSync(ss, `#!/bin/sh\n${body}`);
  chmodSync(ss, 0o755);
  return { dir, ss, pids, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The fake's pids (each read wrote its own) that still exist; their `sleep` children die with their group. */
function stillAlive(pidsFile: string): number[] {
  const pids = readFileSync(pidsFile, 'utf8').split('\n').filter(Boolean).map(Number);
  return pids.filter((p) => {
    try {
      process.kill(p, 0);
      return !/^State:\s+Z/m.test(readFileSync(`/proc/${p}/status`, 'utf8'));
    } catch {
      return false;
    }
  });
}

/** The fake's pids still alive once none is, or after `ms`: polled, since a kill lands when the kernel schedules it. */
async function goneWithin(pidsFile: string, ms: number): Promise<number[]> {
  const end = performance.now() + ms;
  let alive = stillAlive(pidsFile);
  while (alive.length > 0 && performance.now() < end) {
    await new Promise((r) => setTimeout(r, 20));
    alive = stillAlive(pidsFile);
  }
  return alive;
}

test('a hanging ss: the sync read gives up at the deadline and reads /proc; the process group is gone', (t) => {
  const f = fakeSs('hang');
  t.after(() => f.cleanup());
  resetSsUnusable();
  const t0 = performance.now();
  const r = readSockets({ via: 'ss', ssPath: f.ss, localPorts: [{ lo: 1, hi: 65535 }] });
  const ms = performance.now() - t0;
  assert.equal(r.via, 'proc');
  assert.ok(ms >= SS_DEADLINE_MS - 50 && ms < SS_DEADLINE_MS + 3000, `${ms} ms`);
  assert.match(ssUnusable() ?? '', /no answer within 2000 ms \(killed\)/);
  assert.deepEqual(stillAlive(f.pids), []);
  // Given up: the next read does not wait again.
  const t1 = performance.now();
  assert.equal(readSockets({ via: 'ss', ssPath: f.ss }).via, 'proc');
  assert.ok(performance.now() - t1 < 1000);
  resetSsUnusable();
});

test('a hanging ss: the async reads (through the shell, then spawned) give up at the deadline too', async (t) => {
  const f = fakeSs('hang');
  t.after(() => f.cleanup());
  for (const path of ['shell', 'spawn']) {
    resetSsUnusable();
    const t0 = performance.now();
    const r = await readSocketsAsync({ via: 'ss', ssPath: f.ss, listenOnly: true });
    const ms = performance.now() - t0;
    assert.equal(r.via, 'proc', path);
    assert.ok(ms >= SS_DEADLINE_MS - 50 && ms < SS_DEADLINE_MS + 3000, `${path}: ${ms} ms`);
    assert.match(ssUnusable() ?? '', /no answer within/, path);
  }
  // The killed shell took its ss along; the spawned one was killed with its group. A read does
  // not wait for the kill to land, so the processes are given until they are gone (under load,
  // a SIGKILLed process can still be running the moment the read returns).
  const pids = readFileSync(f.pids, 'utf8').split('\n').filter(Boolean);
  assert.equal(pids.length, 2, 'one fake ss per path');
  assert.deepEqual(await goneWithin(f.pids, 10_000), []);
  resetSsUnusable();
});

test('an ss printing garbage with exit 0 is a failed read: /proc answers (sync and async)', async (t) => {
  const f = fakeSs('garbage');
  t.after(() => f.cleanup());
  resetSsUnusable();
  const sync = readSockets({ via: 'ss', ssPath: f.ss });
  assert.equal(sync.via, 'proc');
  assert.match(ssUnusable() ?? '', /2 line\(s\) of its output did not parse \(first: "Netid State/);
  resetSsUnusable();
  const async = await readSocketsAsync({ via: 'ss', ssPath: f.ss, listenOnly: true, udp: true });
  assert.equal(async.via, 'proc');
  assert.match(ssUnusable() ?? '', /did not parse/);
  resetSsUnusable();
});

/** Shell: a TIME_WAIT on 127.0.0.1:PORT (the server closes first), checked in /proc/net/tcp. */
function timeWait(port: number): string {
  const py = `import socket\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1); s.bind(("127.0.0.1",${port})); s.listen()\nc=socket.create_connection(("127.0.0.1",${port})); a,_=s.accept(); a.close(); c.recv(1); c.close(); s.close()`;
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  return `${q(realPython())} -c ${q(py)}\necho "TW=$(grep -c ':${hex} [0-9A-F:]* 06 ' /proc/net/tcp)"`;
}

test('berth port with a garbage ss first on PATH: a TIME_WAIT port is not handed out (69 naming it)', async (t) => {
  if (!requireNetns(t)) return;
  const f = fakeSs('garbage');
  const box = sandbox();
  t.after(() => (f.cleanup(), box.cleanup()));
  const env = `PATH=${q(f.dir)}:"$PATH" BERTH_SOCKET_READER=ss`;
  const r = await netnsSh({}, box, `
${timeWait(21001)}
${env} ${berthSh} port --port 21001; echo "EXACT=$?"
echo "RANGE=$(${env} ${berthSh} port --range 21001-21002)"
`);
  const v = kv(r.stdout);
  assert.equal(v.get('TW'), '1', 'the TIME_WAIT exists');
  assert.equal(v.get('EXACT'), '69', r.stderr);
  assert.match(r.stderr, /port 21001 is not available: it is in use: 21001 TIME_WAIT by kernel-held, closing/);
  assert.equal(v.get('RANGE'), '21002');
});

test('berth port and berth run with a hanging ss first on PATH: both go on from /proc after the deadline, nothing left running', async (t) => {
  if (!requireNetns(t)) return;
  const f = fakeSs('hang');
  const box = sandbox();
  t.after(() => (f.cleanup(), box.cleanup()));
  const env = `PATH=${q(f.dir)}:"$PATH" BERTH_SOCKET_READER=ss`;
  const ready = join(box.dir, 'ready.json');
  const r = await netnsSh({}, box, `
t0=$(date +%s%N)
echo "PORT=$(${env} ${berthSh} port --port 21000)"
echo "PORT_MS=$(( ($(date +%s%N) - t0) / 1000000 ))"
${env} ${berthSh} run --range 21010-21020 --ready tcp --ready-timeout 20s --ready-file ${q(ready)} -- ${q(realPython())} -m http.server {port} --bind 127.0.0.1 > /dev/null 2> ${q(join(box.dir, 'run.err'))} & B=$!
${waitFile(ready)}
echo "READY=$([ -s ${q(ready)} ] && echo yes || echo no)"
kill -TERM $B; wait $B; echo "RC=$?"
cat ${q(join(box.dir, 'run.err'))} >&2
`, 60_000);
  const v = kv(r.stdout);
  assert.equal(v.get('PORT'), '21000', r.stderr);
  assert.ok(Number(v.get('PORT_MS')) < SS_DEADLINE_MS + 5000, `berth port took ${v.get('PORT_MS')} ms`);
  assert.equal(v.get('READY'), 'yes', r.stderr);
  assert.match(r.stderr, /python3 ready on 127\.0\.0\.1:210\d\d/);
  assert.equal(v.get('RC'), '143', r.stderr);
  assert.ok(readFileSync(f.pids, 'utf8').trim() !== '', 'the fake ss was run');
  assert.deepEqual(stillAlive(f.pids), [], 'no fake ss left behind');
});
