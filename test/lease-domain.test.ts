/**
 * The lease domain of issue 19 as users meet it, in network namespaces made for the test:
 * containers with private /tmp sharing one network get disjoint ports with no
 * configuration; holders are small and free their leases with their owner; run/up leases
 * outlive a SIGKILLed berth only while its watchdog stops the service; and the allocator
 * items of issue 22 (4, 8, 9, 15, 16, 17, for run and up).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { BERTH } from './helpers/cli.js';
import { requireNetns, runInNetns } from './helpers/netns.js';

const NODE = process.execPath;
const SVC = join(import.meta.dirname, 'fixtures', 'up', 'svc.mjs');
const env = { ...process.env, NODE, BERTH, SVC, NO_COLOR: '1' };
const sh = (script: string, timeoutMs = 120_000) => runInNetns({}, ['sh', '-c', script], { env, timeoutMs });
const kv = (text: string, key: string) => new RegExp(`^${key}=(.*)$`, 'm').exec(text)?.[1];

function expand(text: string): number[] {
  return text
    .trim()
    .split(/[\s,]+/)
    .filter((w) => /^\d+(-\d+)?$/.test(w))
    .flatMap((w) => {
      const [a, b] = w.split('-').map(Number) as [number, number | undefined];
      return Array.from({ length: (b ?? a) - a + 1 }, (_, i) => a + i);
    });
}

test('three containers (private /tmp, /run, /var/tmp; no BERTH_* variable) sharing a network never get the same port', async (t) => {
  if (!requireNetns(t)) return;
  const containers = join(import.meta.dirname, 'fixtures', 'scripts', 'containers.sh');
  const r = await sh(`OUT=/tmp/berth-containers-$$
    sh ${JSON.stringify(containers)} > $OUT; rc=$?
    cat $OUT
    for p in $(sed -n 's/^PIDS //p' $OUT); do kill $p; done
    rm -f $OUT; exit $rc`);
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
  const owner = new Map<number, string>();
  for (const line of r.stdout.split('\n')) {
    const m = /^(C\d) (single|block|set|up) (.*)$/.exec(line);
    if (!m) continue;
    for (const p of expand(m[3]!)) {
      assert.equal(owner.get(p), undefined, `port ${p} handed to ${owner.get(p)} and to ${m[1]} ${m[2]}`);
      owner.set(p, `${m[1]} ${m[2]}`);
    }
  }
  // Per container: 1 + 16 + (1 + 8) + (1 + 24) ports.
  assert.equal(owner.size, 3 * 51, r.stdout);
  assert.match(r.stdout, /^C3 tmp run stack\.yaml up\.err $/m, 'each container saw only its own /tmp');
});

test('a holder is a small coreutils process (≤ 5 MiB RSS); berth leases names it; release ends it and its whole set', async (t) => {
  if (!requireNetns(t)) return;
  const r = await sh(`
    sleep 60 & OWNER=$!
    "$NODE" "$BERTH" port --range 21000-21099 --ports a,b=block:4 --owner $OWNER >/dev/null
    H=$("$NODE" "$BERTH" leases --json | "$NODE" -e 'const l=JSON.parse(require("fs").readFileSync(0,"utf8"));console.log(l[0].holders[0].pid)')
    echo "CMD=$(tr '\\0' ' ' < /proc/$H/cmdline)"
    echo "RSS=$(sed -n 's/^VmRSS:[^0-9]*\\([0-9]*\\).*/\\1/p' /proc/$H/status)"
    echo "FDS=$(ls -l /proc/$H/fd | grep -c socket:)"
    "$NODE" "$BERTH" release --port 21000
    echo "LEFT=$(grep -c @berth/v1/ /proc/net/unix)"
    "$NODE" "$BERTH" port --range 21000-21099 --owner $OWNER >/dev/null
    kill $OWNER; t0=$(date +%s%N)
    while grep -q @berth/v1/p/ /proc/net/unix; do sleep 0.01; done
    echo "FREED_MS=$(( ($(date +%s%N) - t0) / 1000000 ))"`);
  assert.equal(r.code, 0, r.stderr);
  assert.match(kv(r.stdout, 'CMD')!, /^berth-lease-holder --pid=\d+ -s 0\.2 -f \/dev\/null/);
  const rss = Number(kv(r.stdout, 'RSS'));
  t.diagnostic(`holder RSS ${rss} KiB, ${kv(r.stdout, 'FDS')} fds`);
  assert.ok(rss > 0 && rss <= 5 * 1024, `holder RSS ${rss} KiB`);
  assert.equal(Number(kv(r.stdout, 'FDS')), 5 + 2, '5 port names and 2 records, one socket each');
  assert.match(r.stdout, /released 21000 21001 21002 21003 21004/);
  assert.equal(kv(r.stdout, 'LEFT'), '0');
  assert.ok(Number(kv(r.stdout, 'FREED_MS')) < 1000, `owner death freed the lease after ${kv(r.stdout, 'FREED_MS')} ms`);
});

test('berth run SIGKILLed: its watchdog holds the lease while it stops the service, then it is gone', async (t) => {
  if (!requireNetns(t)) return;
  const r = await sh(`
    "$NODE" "$BERTH" run --port 21500 --stop-grace 2s --ready http://127.0.0.1:{port}/health -- "$NODE" "$SVC" --port {port} --term-delay 600 >/dev/null 2>/tmp/berth-kill-$$ & B=$!
    i=0; until grep -q ready /tmp/berth-kill-$$ || [ $i -ge 2000 ]; do sleep 0.01; i=$((i+1)); done
    kill -9 $B; wait $B 2>/dev/null; rm -f /tmp/berth-kill-$$
    echo "AFTER_KILL=$(grep -c @berth/v1/p/21500@ /proc/net/unix)"
    i=0; while grep -q @berth/v1/p/21500@ /proc/net/unix && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
    # Only this namespace's processes: another copy of the suite runs the same service in its own.
    NS=$(readlink /proc/self/ns/net)
    echo "SERVICE_GONE=$(for d in /proc/[0-9]*; do [ "$(readlink $d/ns/net 2>/dev/null)" = "$NS" ] || continue; tr '\\0' ' ' < $d/cmdline 2>/dev/null; echo; done | grep -q "[s]vc.mjs --port 21500" && echo no || echo yes)"
    echo "LATER=$(grep -c @berth/v1/p/ /proc/net/unix)"`);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(kv(r.stdout, 'AFTER_KILL'), '1', 'the lease outlives berth while the service is being stopped');
  assert.equal(kv(r.stdout, 'SERVICE_GONE'), 'yes');
  assert.equal(kv(r.stdout, 'LATER'), '0', 'and ends once it is stopped');
});

test('issue 22 items 8 and 9: a 70,000-character name is a clear 64; out of descriptors is a clear 74 with nothing left, never a hang', async (t) => {
  if (!requireNetns(t)) return;
  const r = await sh(`
    LONG=$(head -c 70000 /dev/zero | tr '\\0' x)
    "$NODE" "$BERTH" port --range 21000-21099 --name "$LONG" 2>/tmp/e1-$$; echo "NAME_RC=$?"; echo "NAME_ERR=$(head -c 300 /tmp/e1-$$)"
    "$NODE" "$BERTH" port --range 21000-21099 --ports "$LONG" 2>/tmp/e2-$$; echo "PORTS_RC=$?"; echo "PORTS_ERR_BYTES=$(wc -c < /tmp/e2-$$)"
    "$NODE" "$BERTH" run --name "$LONG" --range 21000-21099 -- true 2>/tmp/e3-$$; echo "RUN_RC=$?"
    (ulimit -n 64; timeout 30 "$NODE" "$BERTH" port --range 21000-21999 --count 200 --ttl 1m 2>/tmp/e4-$$; echo "FD_RC=$?")
    echo "FD_ERR=$(head -c 400 /tmp/e4-$$)"
    NAMES=$(seq -s, -f 'p%g' 100)
    (ulimit -n 64; timeout 30 "$NODE" "$BERTH" run --range 21000-21999 --ports "$NAMES" -- true 2>/tmp/e5-$$; echo "RUNFD_RC=$?")
    echo "RUNFD_ERR=$(head -c 200 /tmp/e5-$$)"
    echo "LEFT=$(grep -c @berth/v1/ /proc/net/unix)"
    rm -f /tmp/e[1-5]-$$`);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(kv(r.stdout, 'NAME_RC'), '64');
  assert.match(kv(r.stdout, 'NAME_ERR')!, /--name is 70000 characters long; a lease name has at most 64/);
  assert.equal(kv(r.stdout, 'PORTS_RC'), '64');
  assert.ok(Number(kv(r.stdout, 'PORTS_ERR_BYTES')) < 600, 'the message quotes the flag in part only');
  assert.equal(kv(r.stdout, 'RUN_RC'), '64');
  assert.equal(kv(r.stdout, 'FD_RC'), '74');
  assert.match(kv(r.stdout, 'FD_ERR')!, /out of file descriptors .*EMFILE; RLIMIT_NOFILE soft 64, hard 64.*raise the limit \(ulimit -n/);
  assert.equal(kv(r.stdout, 'RUNFD_RC'), '74', kv(r.stdout, 'RUNFD_ERR'));
  assert.equal(kv(r.stdout, 'LEFT'), '0', 'everything was given back');
});

test('issue 22 items 15, 16 and 4: concurrent first use, a set in progress retried, BERTH_STATE_DIR never splits the domain', async (t) => {
  if (!requireNetns(t)) return;
  const r = await sh(`
    # 15: 20 allocators on a namespace nobody used yet.
    for i in $(seq 20); do "$NODE" "$BERTH" port --range 22000-22999 --block 8 --ttl 1m >/dev/null 2>>/tmp/first-$$ & done; wait
    echo "FIRST_ERR=$(grep -c . /tmp/first-$$)"; rm -f /tmp/first-$$
    echo "FIRST_LEASED=$("$NODE" "$BERTH" leases --json | grep -c '"port"')"
    # 16: an allocator still building its set holds 22500 (its port name, no record yet, and a TCP hold), and lets go 0.5 s later.
    "$NODE" -e 'const net=require("net");const a=net.createServer().listen({path:String.fromCharCode(0)+"berth/v1/a/0/"+process.pid+"/22500-22500/x"});const n=net.createServer().listen({path:String.fromCharCode(0)+"berth/v1/p/22500"});const h=net.createServer().listen(22500,()=>{console.log("held");setTimeout(()=>process.exit(0),500)})' > /tmp/held-$$ &
    until grep -q held /tmp/held-$$ 2>/dev/null; do sleep 0.01; done; rm -f /tmp/held-$$
    "$NODE" "$BERTH" port --port 22500 --ttl 1m; echo "RETRY_RC=$?"
    # 4: two berths with different BERTH_STATE_DIR still share the domain.
    BERTH_STATE_DIR=/tmp/s1-$$ "$NODE" "$BERTH" port --port 22600 --ttl 1m >/dev/null
    BERTH_STATE_DIR=/tmp/s2-$$ "$NODE" "$BERTH" port --port 22600 --ttl 1m 2>&1; echo "SPLIT_RC=$?"
    "$NODE" "$BERTH" release --all >/dev/null`);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(kv(r.stdout, 'FIRST_ERR'), '0', 'no allocator fails on first use');
  assert.equal(kv(r.stdout, 'FIRST_LEASED'), '160');
  assert.equal(kv(r.stdout, 'RETRY_RC'), '0', `a set in progress is transient: retried, not a 69 at once\n${r.stdout}`);
  assert.match(r.stdout, /^22500$/m);
  assert.equal(kv(r.stdout, 'SPLIT_RC'), '69');
  assert.match(r.stdout, /22600 leased to no owner pid/);
});

test('issue 22 item 17: a signal stops a long reservation at the next port; nothing is spawned after it', async (t) => {
  if (!requireNetns(t)) return;
  // Three 4000-port blocks: a reservation of about a second, so the signal lands inside it.
  const r = await runInNetns({ ephemeral: '50000 60999' }, ['sh', '-c', `
    D=$(mktemp -d); export D
    "$NODE" "$BERTH" run --range 20000-49999 --ports http,a=block:4000,b=block:4000,c=block:4000 -- sh -c 'touch "$D/spawned-$PPID"' 2>"$D/sig" & B=$!
    until grep -q @berth/v1/p/ /proc/net/unix || ! kill -0 $B 2>/dev/null; do sleep 0.005; done
    kill -TERM $B; wait $B; echo "RC=$?"
    echo "ERR=$(head -c 200 "$D/sig")"
    echo "SPAWNED=$(ls "$D"/spawned-* 2>/dev/null | wc -l)"
    echo "LEFT=$(grep -c @berth/v1/ /proc/net/unix)"
    rm -rf "$D"`], { env, timeoutMs: 120_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(kv(r.stdout, 'RC'), '143', kv(r.stdout, 'ERR'));
  assert.equal(kv(r.stdout, 'SPAWNED'), '0', 'the service was never started');
  assert.equal(kv(r.stdout, 'LEFT'), '0');
});

test('issue 22 item 17 for up: a signal stops the stack\'s long reservation at the next port; nothing is spawned', async (t) => {
  if (!requireNetns(t)) return;
  // Three 4000-port blocks in one replica's set: a reservation of about a second.
  const r = await runInNetns({ ephemeral: '50000 60999' }, ['sh', '-c', `
    D=$(mktemp -d /tmp/berth-upsig-XXXXXX)
    cat > $D/s.yaml <<YAML
services:
  web:
    command: [sh, -c, 'touch $D/spawned; sleep 30']
    range: 20000-49999
    ports: { http: 1, a: { block: 4000 }, b: { block: 4000 }, c: { block: 4000 } }
YAML
    "$NODE" "$BERTH" up $D/s.yaml --run-dir $D/run >/dev/null 2>$D/err & B=$!
    until grep -q @berth/v1/p/ /proc/net/unix || ! kill -0 $B 2>/dev/null; do sleep 0.005; done
    kill -TERM $B; wait $B; echo "RC=$?"
    echo "ERR=$(head -c 300 $D/err | tr '\\n' ' ')"
    echo "SPAWNED=$(ls $D/spawned 2>/dev/null | wc -l)"
    echo "LEFT=$(grep -c @berth/v1/ /proc/net/unix)"
    rm -rf $D`], { env, timeoutMs: 120_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(kv(r.stdout, 'RC'), '143', kv(r.stdout, 'ERR'));
  assert.equal(kv(r.stdout, 'SPAWNED'), '0', `the service was never started: ${r.stdout}`);
  assert.equal(kv(r.stdout, 'LEFT'), '0');
  assert.doesNotMatch(kv(r.stdout, 'ERR') ?? '', /internal error/);
});

test('a zombie --owner keeps its lease until it is reaped, then the lease ends (documented in leases.md)', async (t) => {
  if (!requireNetns(t)) return;
  const py = `
import os, subprocess, time
def leased(): return '@berth/v1/p/24900' in open('/proc/net/unix').read()
p = subprocess.Popen(['sh', '-c', '"$NODE" "$BERTH" port --port 24900 --owner $$ >/dev/null'])
while open('/proc/%d/stat' % p.pid).read().rsplit(') ', 1)[1][0] != 'Z': time.sleep(0.05)
time.sleep(0.6)
print('ZOMBIE_LEASED=%s' % leased(), flush=True)
p.wait()
end = time.time() + 5
while leased() and time.time() < end: time.sleep(0.05)
print('REAPED_LEASED=%s' % leased(), flush=True)
`;
  const r = await runInNetns({}, ['/usr/bin/python3', '-c', py], { env, timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(kv(r.stdout, 'ZOMBIE_LEASED'), 'True', 'tail --pid counts a zombie as alive');
  assert.equal(kv(r.stdout, 'REAPED_LEASED'), 'False', 'reaped: the lease ends');
});

test('the library\'s deprecated stateDir/leaseDir are still accepted and ignored: no directory, the namespace\'s leases', async (t) => {
  if (!requireNetns(t)) return;
  const index = join(import.meta.dirname, '..', 'src', 'index.ts');
  const code = `
    import { existsSync } from 'node:fs';
    import { currentLeases, reserve } from ${JSON.stringify(index)};
    const dir = '/tmp/berth-deprecated-' + process.pid;
    const r = await reserve({ source: { kind: 'range', range: { lo: 24950, hi: 24959 } }, stateDir: dir, leaseDir: dir });
    const listed = currentLeases({ stateDir: dir, leaseDir: dir }).map((l) => l.port);
    console.log('LISTED=' + listed.includes(r.ports[0]) + ' DIR=' + existsSync(dir));
    await r.release();`;
  const r = await runInNetns({}, [NODE, '--import', 'tsx', '--input-type=module', '-e', code], { env, timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^LISTED=true DIR=false$/m);
});
