import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { berth, tempStateDir } from './helpers/cli.js';
import { requireNetns } from './helpers/netns.js';

const noStack = (s: string) => assert.doesNotMatch(s, /\n\s+at .+:\d+:\d+/, 'a user error must not print a stack trace');

test('--help lists commands; unknown command and bad flags are usage errors (64)', async () => {
  const top = await berth(['--help']);
  assert.equal(top.code, 0);
  for (const c of ['inspect', 'doctor', 'port', 'release', 'leases']) assert.match(top.stdout, new RegExp(`\\n  ${c} `));
  const unknown = await berth(['frobnicate']);
  assert.equal(unknown.code, 64);
  assert.match(unknown.stderr, /unknown command "frobnicate"/);
  const badFlag = await berth(['port', '--bogus']);
  assert.equal(badFlag.code, 64);
  assert.match(badFlag.stderr, /port: Unknown option '--bogus'/);
  noStack(badFlag.stderr);
  const badRange = await berth(['port', '--range', '30000-20000']);
  assert.equal(badRange.code, 64);
  assert.match(badRange.stderr, /--range 30000-20000: need 1 ≤ LO ≤ HI ≤ 65535/);
  const badTtl = await berth(['port', '--range', '20000-20010', '--ttl', 'soon']);
  assert.equal(badTtl.code, 64);
  assert.match(badTtl.stderr, /--ttl "soon": expected a duration like 500ms, 10s, 5m/);
  for (const c of ['inspect', 'doctor', 'port', 'release', 'leases']) {
    const h = await berth([c, '--help']);
    assert.equal(h.code, 0, c);
    assert.match(h.stdout, /Usage: berth /);
    assert.match(h.stdout, /Examples?:/);
  }
});

test('doctor: an invalid layout exits 65 naming file, line and band, without a stack trace', async () => {
  const r = await berth(['doctor', '--layout', 'test/fixtures/layouts/bad-overlap.yaml']);
  assert.equal(r.code, 65);
  assert.match(r.stderr, /bad-overlap\.yaml:3: band "router"/);
  noStack(r.stderr);
  const missing = await berth(['doctor', '--layout', 'no/such/layout.yaml']);
  assert.equal(missing.code, 65);
  assert.match(missing.stderr, /no\/such\/layout\.yaml: cannot read layout file: no such file/);
});

test('doctor on a host whose ephemeral range starts at 9000: exit 1 with both fixes; JSON and text agree', async (t) => {
  if (!requireNetns(t)) return;
  const env = { BERTH_STATE_DIR: tempStateDir() };
  const netns = { ephemeral: '9000 65499' };
  const r = await berth(['doctor', '--layout', 'examples/layouts/gpu-fixed-10000.yaml'], { netns, env });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stdout, /sysctl -w net\.ipv4\.ip_local_reserved_ports=10000-12047/);
  assert.match(r.stdout, /6928-8975/);
  const j = await berth(['doctor', '--layout', 'examples/layouts/gpu-fixed-10000.yaml', '--json'], { netns, env });
  assert.equal(j.code, 1);
  const report = JSON.parse(j.stdout);
  assert.deepEqual(report.host.ephemeral, { lo: 9000, hi: 65499 });
  assert.ok(report.summary.errors >= 1);
  const f = report.findings.find((x: { code: string }) => x.code === 'band-in-ephemeral');
  assert.equal(f.band, 'gpu');
  assert.ok(f.fixes.some((x: { kind: string; command?: string }) => x.kind === 'sysctl' && x.command === 'sysctl -w net.ipv4.ip_local_reserved_ports=10000-12047'));
  // The reserved ports make the same layout safe.
  const fixed = await berth(['doctor', '--layout', 'examples/layouts/gpu-fixed-10000.yaml'], { netns: { ...netns, reserved: '10000-12047' }, env });
  assert.equal(fixed.code, 0, fixed.stdout);
  // The default layout on that host lies below the ephemeral range.
  const def = await berth(['doctor', '--json'], { netns, env });
  assert.equal(def.code, 0);
  assert.deepEqual(JSON.parse(def.stdout).layout.bands.map((b: { lo: number; hi: number }) => [b.lo, b.hi]), [[1024, 8999]]);
});

test('port / leases / release round trip in a namespace; busy explicit port names its holder (69)', async (t) => {
  if (!requireNetns(t)) return;
  const dir = tempStateDir();
  // One shell in one namespace: a listener holds 20005, then the CLI runs against it.
  const script = `
    node -e "require('net').createServer().listen(20005,'127.0.0.1',()=>console.log('up'))" > /tmp/berth-cli-holder.$$ &
    while ! grep -q up /tmp/berth-cli-holder.$$ 2>/dev/null; do sleep 0.02; done
    B="${process.execPath} dist/berth.js"
    echo "== port"; $B port --range 20000-20009 --count 3 --name web --ttl 5m; echo "rc=$?"
    echo "== busy"; $B port --port 20005 2>&1; echo "rc=$?"
    echo "== leases"; $B leases --json
    echo "== release"; $B release --port 20001; echo "rc=$?"
    echo "== after"; $B leases --json
    echo "== env"; $B port --range 20000-20009 --count 2 --format env --ttl 1m
    kill $!; rm -f /tmp/berth-cli-holder.$$`;
  const { runInNetns } = await import('./helpers/netns.js');
  const r = await runInNetns({}, ['sh', '-c', script], { env: { ...process.env, BERTH_STATE_DIR: dir, NO_COLOR: '1' } });
  const section = (name: string) => r.stdout.split(`== ${name}\n`)[1]!.split('\n== ')[0]!.trimEnd();
  assert.equal(section('port'), '20000\n20001\n20002\nrc=0');
  assert.match(section('busy'), /20005/);
  assert.match(section('busy'), /by pid \d+ \(node -e /);
  assert.match(section('busy'), /LISTEN/);
  assert.match(section('busy'), /rc=69/);
  const leases = JSON.parse(section('leases'));
  assert.deepEqual(leases.map((l: { port: number }) => l.port), [20000, 20001, 20002]);
  assert.ok(leases.every((l: { name: string; live: boolean; expiresAt: number }) => l.name === 'web' && l.live && l.expiresAt > Date.now()));
  // One holder holds the set of one berth port call: releasing a port of it ends the set.
  assert.match(section('release'), /released 20000 20001 20002\nrc=0/);
  assert.deepEqual(JSON.parse(section('after')).map((l: { port: number }) => l.port), []);
  // 20000-20002 are free again; 20005 is held by the listener.
  assert.equal(section('env'), 'BERTH_PORTS=20000,20001\nBERTH_PORT_0=20000\nBERTH_PORT_1=20001');
});

test('inspect --json shows a real listener on an asked port with its owner', async (t) => {
  if (!requireNetns(t)) return;
  const { runInNetns } = await import('./helpers/netns.js');
  const script = `
    node -e "require('net').createServer().listen(23456,'::',()=>console.log('up'))" > /tmp/berth-inspect.$$ &
    while ! grep -q up /tmp/berth-inspect.$$ 2>/dev/null; do sleep 0.02; done
    ${process.execPath} dist/berth.js inspect --port 23456 --json; kill $!; rm -f /tmp/berth-inspect.$$`;
  const r = await runInNetns({ ephemeral: '40000 50000' }, ['sh', '-c', script], { env: { ...process.env, BERTH_STATE_DIR: tempStateDir() } });
  const report = JSON.parse(r.stdout);
  assert.deepEqual(report.host.ephemeral, { lo: 40000, hi: 50000 });
  const row = report.sockets.find((s: { localPort: number }) => s.localPort === 23456);
  assert.equal(row.state, 'LISTEN');
  assert.equal(row.family, 6);
  assert.equal(row.owners[0].comm, 'node');
});

test('doctor --html writes a self-contained page atomically', async () => {
  const dir = tempStateDir();
  const out = `${dir}/port-space.html`;
  const r = await berth(['doctor', '--layout', 'examples/layouts/rl-framework.yaml', '--html', out], { env: { BERTH_STATE_DIR: dir } });
  assert.ok(r.code === 0 || r.code === 1, r.stderr);
  const html = readFileSync(out, 'utf8');
  assert.match(html, /^<!DOCTYPE html>/i);
  assert.match(html, /id="berth-data"/);
  assert.doesNotMatch(html, /<script[^>]+src=|<link[^>]+href=/i);
});

// Issue 32 item 22: `inspect` alone counted sockets and listed none; a listener held outside
// berth's PID namespace was shown as a bare "uid 0".
test('inspect alone lists every listener; a holder outside the PID namespace is said to be so', async (t) => {
  if (!requireNetns(t)) return;
  const { runInNetns } = await import('./helpers/netns.js');
  const dir = tempStateDir();
  const flag = `${dir}/up`;
  const listen = `require('net').createServer().listen(23457,'127.0.0.1',()=>require('fs').writeFileSync(process.argv[1],'up'))`;
  const script = `
    "${process.execPath}" -e "${listen}" "${flag}" & L=$!
    while [ ! -e "${flag}" ]; do sleep 0.02; done
    "${process.execPath}" dist/berth.js inspect; echo "== pidns"
    unshare --pid --fork --mount-proc "${process.execPath}" dist/berth.js inspect --port 23457 --json; kill $L`;
  const r = await runInNetns({}, ['sh', '-c', script], { env: { ...process.env, BERTH_STATE_DIR: dir, NO_COLOR: '1' } });
  const [text, json] = r.stdout.split('== pidns\n') as [string, string];
  assert.match(text, /^Listening sockets \(1; --port P or --range LO-HI lists every state\)$/m, r.stdout + r.stderr);
  assert.match(text, /^ {2}23457 +LISTEN +127\.0\.0\.1 +- +- +pid \d+ \(node\)/m);
  if (process.getuid?.() !== 0) return; // unshare --pid needs root here
  const row = JSON.parse(json).sockets.find((s: { localPort: number }) => s.localPort === 23457);
  assert.equal(row.owners, undefined);
  assert.equal(row.ownerHidden, 'pid-namespace');
});
