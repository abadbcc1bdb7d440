/**
 * UDP sockets against the real kernel (issue 28 part 3: "UDP is invisible"), each test in a
 * network namespace of its own. A UDP socket bound on a port: inspect and doctor show it (from
 * /proc and from sock_diag alike), `berth port` does not hand the port out and says whose
 * socket it is, the audit names a tree's UDP socket outside its ports, and a reservation
 * with `udp` holds the UDP side until it lets go. Then Debian's coturn (turnserver): with its
 * UDP port taken it is refused before start, by `berth run --udp` and by a stack whose port
 * entry says `{ udp: true }`; with the port free it starts and binds both sides.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireNetns } from './helpers/netns.js';
import { berthSh, kv, netnsSh, NODE, q, realPython, ROOT, sandbox, waitFile } from './fixtures/services/launch-harness.js';

/** Shell: a python3 UDP socket bound on ADDR:PORT in the background; $U is its pid, once bound. */
function udpBlocker(dir: string, addr: string, port: number, family = 'AF_INET'): string {
  const flag = join(dir, `udp-${port}.bound`);
  const py = `import socket,time\ns=socket.socket(socket.${family},socket.SOCK_DGRAM)\ns.bind((${JSON.stringify(addr)},${port}))\nopen(${JSON.stringify(flag)},'w').write('1')\ntime.sleep(120)`;
  return `${q(realPython())} -c ${q(py)} & U=$!\n${waitFile(flag)}\necho "UPID=$U"`;
}

function turnserver(): string | undefined {
  const r = spawnSync('sh', ['-c', 'command -v turnserver'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** Skip (loudly) without Debian's coturn; in CI (.ci/run installs it) its absence fails. */
function requireTurn(t: { skip(m: string): void; name: string }): string | undefined {
  const bin = turnserver();
  if (bin !== undefined) return bin;
  if (process.env.CI) throw new Error('turnserver (Debian coturn) is missing: .ci/run installs it');
  process.stderr.write(`\n!!! SKIPPING "${t.name}": no turnserver (apt-get install coturn). In CI this is a failure.\n\n`);
  t.skip('needs turnserver (coturn)');
  return undefined;
}

test('udp: a bound UDP socket is shown by inspect and doctor (proc and ss agree) and its port is not handed out', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const r = await netnsSh({}, box, `
${udpBlocker(box.dir, '127.0.0.1', 1024)}
BERTH_SOCKET_READER=proc ${berthSh} inspect --port 1024 --json > ${q(join(box.dir, 'proc.json'))}; echo "INSPECT=$?"
BERTH_SOCKET_READER=ss ${berthSh} inspect --port 1024 --json > ${q(join(box.dir, 'ss.json'))}
${berthSh} inspect --port 1024 > ${q(join(box.dir, 'inspect.txt'))}
${berthSh} doctor --range 1024-1030 > ${q(join(box.dir, 'doctor.txt'))}
${berthSh} inspect > ${q(join(box.dir, 'listening.txt'))}
${berthSh} port --port 1024 2> ${q(join(box.dir, 'port.err'))}; echo "PORT1=$?"
BERTH_SOCKET_READER=ss ${berthSh} port --port 1024 2> ${q(join(box.dir, 'port-ss.err'))}; echo "PORT1SS=$?"
echo "RANGE=$(${berthSh} port --range 1024-1025)"
kill $U
`);
  const v = kv(r.stdout);
  const upid = Number(v.get('UPID'));
  assert.equal(v.get('INSPECT'), '0', r.stderr);
  const { readFileSync } = await import('node:fs');
  const read = (f: string) => readFileSync(join(box.dir, f), 'utf8');
  for (const f of ['proc.json', 'ss.json']) {
    const rep = JSON.parse(read(f));
    assert.equal(rep.sockets.length, 1, `${f}: ${read(f)}`);
    const s = rep.sockets[0];
    assert.equal(s.protocol, 'udp', f);
    assert.equal(s.localPort, 1024);
    assert.equal(s.localAddress, '127.0.0.1');
    assert.equal(s.state, 'CLOSE');
    assert.equal(s.owners[0].pid, upid, f);
  }
  assert.match(read('inspect.txt'), new RegExp(`^  1024 +UDP UNCONN +127\\.0\\.0\\.1 +- +- +pid ${upid} \\(python3`, 'm'));
  assert.match(read('inspect.txt'), /sockets on host +UDP UNCONN 1/);
  assert.match(read('doctor.txt'), new RegExp(`^  1024 +UDP UNCONN +127\\.0\\.0\\.1 .*pid ${upid}`, 'm'));
  assert.match(read('listening.txt'), new RegExp(`^  1024 +UDP UNCONN +127\\.0\\.0\\.1 .*pid ${upid}`, 'm'), 'inspect alone lists UDP listeners too');
  assert.equal(v.get('PORT1'), '69');
  assert.equal(v.get('PORT1SS'), '69');
  for (const f of ['port.err', 'port-ss.err']) assert.match(read(f), new RegExp(`^berth: port 1024 is not available: it is in use: 1024 UDP socket by pid ${upid} \\(`), f);
  assert.equal(v.get('RANGE'), '1025');
});

test('udp: the audit names a UDP socket of the tree bound outside its ports', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const ready = join(box.dir, 'ready.json');
  const err = join(box.dir, 'err');
  // TCP on its port, and a UDP socket on 23000 (outside it): a TURN server's second port, say.
  const py = 'import socket,sys,time\nt=socket.socket(); t.bind(("127.0.0.1",int(sys.argv[1]))); t.listen()\nu=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); u.bind(("127.0.0.1",23000))\ntime.sleep(120)';
  const r = await netnsSh({}, box, `
${berthSh} run --range 22000-22010 --name turn --json --ready-file ${q(ready)} -- ${q(realPython())} -c ${q(py)} {port} 2> ${q(err)} & B=$!
${waitFile(ready)}
i=0; until grep -q 'UDP 23000' ${q(err)} || [ $i -ge 3000 ]; do sleep 0.01; i=$((i+1)); done
kill -TERM $B; wait $B
cat ${q(err)} >&2
`, 60_000);
  const lines = r.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const warnings = lines.filter((e) => e.event === 'warning' && /UDP 23000/.test(e.message));
  assert.equal(warnings.length, 1, r.stderr);
  assert.match(warnings[0].message, /^turn listens on UDP 23000 outside its ports \(port 220\d\d\); nothing leases 23000 for it/);
  const audit = lines.filter((e) => e.event === 'audit').flatMap((e) => e.listeners);
  assert.deepEqual(audit.map((l: any) => [l.port, l.protocol]), [[23000, 'udp']], r.stderr);
});

test('udp: a reservation with udp holds the port\'s UDP side until unhold, and refuses a port whose UDP side is taken', async (t) => {
  if (!requireNetns(t)) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const script = join(box.dir, 'hold.mjs');
  const flag = join(box.dir, 'held');
  const go = join(box.dir, 'go');
  writeFileSync(
    script,
    `import { reserve } from ${JSON.stringify(join(ROOT, 'dist/index.js'))};
import { existsSync, writeFileSync } from 'node:fs';
const r = await reserve({ port: 24000, udp: true, name: 'udp-hold' });
writeFileSync(${JSON.stringify(flag)}, String(r.ports[0]));
while (!existsSync(${JSON.stringify(go)})) await new Promise((ok) => setTimeout(ok, 10));
await r.unhold();
await r.release();
writeFileSync(${JSON.stringify(flag)}, 'unheld');
`,
  );
  const bind = (port: number) => `${q(realPython())} -c ${q(`import socket\ns=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM)\ntry:\n  s.bind(("::",${port})); print("BIND=ok")\nexcept OSError as e: print("BIND=" + str(e.errno))`)}`;
  const r = await netnsSh({}, box, `
${q(NODE)} ${q(script)} & N=$!
${waitFile(flag)}
echo "HELD=$(cat ${q(flag)})"
echo "DURING_$(${bind(24000)})"
${q(realPython())} -c ${q('import socket\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ntry:\n  s.bind(("127.0.0.1",24000)); print("V4=ok")\nexcept OSError as e: print("V4=" + str(e.errno))')}
touch ${q(go)}
i=0; until grep -q unheld ${q(flag)} || [ $i -ge 1000 ]; do sleep 0.01; i=$((i+1)); done
echo "AFTER_$(${bind(24000)})"
wait $N; echo "NODE=$?"
${udpBlocker(box.dir, '127.0.0.1', 24001)}
${q(NODE)} --input-type=module -e ${q(`import { reserve } from ${JSON.stringify(join(ROOT, 'dist/index.js'))};\ntry { await reserve({ port: 24001, udp: true }); console.log('TAKEN=yes'); } catch (e) { console.log('TAKEN=' + e.exitCode); console.error(e.message); }\nprocess.exit(0);`)}
kill $U
`);
  const v = kv(r.stdout);
  assert.equal(v.get('HELD'), '24000', r.stderr);
  assert.equal(v.get('DURING_BIND'), '98', `held: EADDRINUSE on [::]:24000\n${r.stdout}${r.stderr}`);
  assert.equal(v.get('V4'), '98', 'the dual-stack hold covers IPv4 too');
  assert.equal(v.get('AFTER_BIND'), 'ok', r.stdout + r.stderr);
  assert.equal(v.get('NODE'), '0', r.stderr);
  assert.equal(v.get('TAKEN'), '69', r.stderr);
  assert.match(r.stderr, /port 24001 is not available: it is in use: 24001 UDP socket by pid \d+/);
});

/** turnserver on 127.0.0.1:{port}, TCP and UDP, no TLS/DTLS; "started" goes to FILE before it execs. */
function turnCmd(bin: string, started: string, port = '{port}'): string[] {
  return ['sh', '-c', `echo started > ${q(started)}; exec "$0" "$@"`, bin, '-n', '--listening-ip', '127.0.0.1', '-p', port, '--no-tls', '--no-dtls', '--no-cli', '--log-file', 'stdout', '--simple-log'];
}

test('udp: coturn with its UDP port taken is refused before it starts (berth run --udp); with the port free it is ready and binds both sides', async (t) => {
  if (!requireNetns(t)) return;
  const bin = requireTurn(t);
  if (bin === undefined) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const started = join(box.dir, 'started');
  const ready = join(box.dir, 'ready.json');
  const cmd = (p: string) => turnCmd(bin, started, p).map(q).join(' ');
  const r = await netnsSh({}, box, `
${udpBlocker(box.dir, '127.0.0.1', 3478)}
${berthSh} run --port 3478 --udp --ready tcp --ready-timeout 20s -- ${cmd('{port}')} > /dev/null 2> ${q(join(box.dir, 'taken.err'))}; echo "TAKEN=$?"
echo "STARTED=$([ -e ${q(started)} ] && echo yes || echo no)"
${berthSh} run --range 3478-3480 --udp --ready tcp --ready-file ${q(ready)} --ready-timeout 20s -- ${cmd('{port}')} > ${q(join(box.dir, 'turn.out'))} 2>&1 & B=$!
${waitFile(ready)}
P=$(sed -n 's/.*"port": \\([0-9]*\\).*/\\1/p' ${q(ready)} | head -1)
echo "PORT=$P"
i=0; until ss -uanpH "sport = :$P" | grep -q turnserver || [ $i -ge 1000 ]; do sleep 0.01; i=$((i+1)); done
echo "UDPSIDE=$(ss -uanpH "sport = :$P" | grep -c turnserver)"
echo "TCPSIDE=$(ss -tlnpH "sport = :$P" | grep -c turnserver)"
kill -TERM $B; wait $B; echo "RC=$?"
kill $U
cat ${q(join(box.dir, 'taken.err'))} >&2
`, 60_000);
  const v = kv(r.stdout);
  assert.equal(v.get('TAKEN'), '69', r.stderr);
  assert.match(r.stderr, new RegExp(`port 3478 is not available: it is in use: 3478 UDP socket by pid ${v.get('UPID')} `));
  assert.equal(v.get('STARTED'), 'no', 'turnserver never ran');
  assert.equal(v.get('PORT'), '3479', 'the range passes over 3478, whose UDP side is taken');
  assert.ok(Number(v.get('UDPSIDE')) >= 1, `coturn bound the UDP side: ${r.stdout}`);
  assert.ok(Number(v.get('TCPSIDE')) >= 1, r.stdout);
  assert.equal(v.get('RC'), '143', r.stderr);
});

test('udp: a stack whose coturn port entry says { udp: true }: its UDP side taken is 69 before start; free, coturn is ready', async (t) => {
  if (!requireNetns(t)) return;
  const bin = requireTurn(t);
  if (bin === undefined) return;
  const box = sandbox();
  t.after(() => box.cleanup());
  const started = join(box.dir, 'started');
  const stack = (range: string) => `services:\n  turn:\n    range: ${range}\n    ports:\n      turn: { udp: true }\n    command: ${JSON.stringify(turnCmd(bin, started, '{ports.turn}'))}\n    ready: tcp\n    ready_timeout: 20s\n`;
  writeFileSync(join(box.dir, 'taken.yaml'), stack('3478-3478'));
  writeFileSync(join(box.dir, 'free.yaml'), stack('3478-3480'));
  const r = await netnsSh({}, box, `
${udpBlocker(box.dir, '::', 3478, 'AF_INET6')}
${berthSh} up ${q(join(box.dir, 'taken.yaml'))} --run-dir ${q(join(box.dir, 'run1'))} > /dev/null 2> ${q(join(box.dir, 'taken.err'))}; echo "TAKEN=$?"
echo "STARTED=$([ -e ${q(started)} ] && echo yes || echo no)"
${berthSh} up ${q(join(box.dir, 'free.yaml'))} --run-dir ${q(join(box.dir, 'run2'))} > /dev/null 2> ${q(join(box.dir, 'free.err'))} & B=$!
i=0; until grep -q 'turn/0 ready\\|ready on' ${q(join(box.dir, 'free.err'))} 2>/dev/null || ! kill -0 $B 2>/dev/null || [ $i -ge 2000 ]; do sleep 0.01; i=$((i+1)); done
echo "UDPSIDE=$(ss -uanpH 'sport = :3479' | grep -c turnserver)"
kill -TERM $B; wait $B; echo "RC=$?"
kill $U
cat ${q(join(box.dir, 'taken.err'))} ${q(join(box.dir, 'free.err'))} >&2
`, 90_000);
  const v = kv(r.stdout);
  assert.equal(v.get('TAKEN'), '69', r.stderr);
  assert.match(r.stderr, new RegExp(`turn/0 failed: no port: port "turn": no usable port in range 3478 .*\\n  1 in use: 3478 UDP socket by pid ${v.get('UPID')} `));
  assert.equal(v.get('STARTED'), 'no', 'turnserver never ran');
  assert.ok(Number(v.get('UDPSIDE')) >= 1, `${r.stdout}\n${r.stderr}`);
});
