/**
 * Jobs of many ranks (`job: true` with `replicas:`) and shared ports (`NAME: shared`), on
 * real processes in network namespaces of their own: every rank starts, the stack ends when
 * all have exited (the first failing rank's status, the others stopped), rank 0 ending
 * first is no success, and the shared port is leased outside the ephemeral range, held until
 * rank 0 starts, bound by rank 0 and reached by every other rank.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { BERTH, berth } from './helpers/cli.js';
import { netnsArgv, requireNetns, runCollect, type NetnsSysctls } from './helpers/netns.js';
import { NEED, requireNeeds } from './helpers/require.js';
import { pidsWithEnv, cmdline } from './helpers/procs.js';
import { at, box, events, type Box } from './fixtures/up/harness.js';

const PY = '/usr/bin/python3';

/** A stack in a private folder, removed after the test. */
function stackBox(t: TestContext, yaml: string): Box {
  const b = box(yaml);
  t.after(() => b.cleanup());
  return b;
}

/** `berth up` on it, in a new network namespace unless `netns` is null. */
function upIn(b: Box, netns: NetnsSysctls | null = {}, extra: string[] = []) {
  return berth(['up', b.stack, '--run-dir', b.runDir, ...extra], { ...(netns ? { netns } : {}), env: { BERTH_STATE_DIR: b.stateDir } });
}

const endpoints = (b: Box) => JSON.parse(readFileSync(join(b.runDir, 'endpoints.json'), 'utf8'));

/**
 * Rank 0 listens on MASTER_PORT (as torch's TCPStore does); every other rank connects to
 * MASTER_ADDR:MASTER_PORT, sends its rank and waits for the reply; rank 0 sums what it got.
 */
const RENDEZVOUS = `
import os, socket, sys, time
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
assert os.environ["BERTH_PORT_MASTER"] == str(port), "BERTH_PORT_MASTER"
assert os.environ["BERTH_RANK"] == str(rank) and os.environ["BERTH_WORLD_SIZE"] == str(world)
if rank == 0:
    s = socket.socket(); s.bind(("0.0.0.0", port)); s.listen(16)
    total = 0
    conns = []
    for _ in range(world - 1):
        c, _ = s.accept(); total += int(c.recv(16)); conns.append(c)
    for c in conns: c.sendall(b"ok")
    print("sum", total + 0, "world", world, "port", port, flush=True)
else:
    for i in range(200):
        try:
            c = socket.create_connection((addr, port)); break
        except OSError:
            time.sleep(0.05)
    c.sendall(str(rank).encode()); assert c.recv(2) == b"ok"
    print("rank", rank, "done", flush=True)
`;

function rendezvousStack(dir: string, extra = ''): string {
  writeFileSync(join(dir, 'rdv.py'), RENDEZVOUS);
  return `
services:
  trainer:
    job: true
    replicas: 3
    ports:
      master: shared
    command: [${PY}, rdv.py]
    env:
      MASTER_ADDR: "{ports.master.host}"
      MASTER_PORT: "{ports.master}"
      RANK: "{rank}"
      WORLD_SIZE: "{world_size}"
      LOCAL_RANK: "{local_rank}"
${extra}`;
}

test('three ranks meet on the shared port rank 0 binds; the stack exits 0 once all have', async (t) => {
  if (!requireNetns(t)) return;
  const b = stackBox(t, '');
  writeFileSync(b.stack, rendezvousStack(b.dir));
  // A low ephemeral range: the shared port must still be outside it. The lease list is read
  // in the same network namespace (the lease domain) once up has ended.
  const leasesFile = join(b.dir, 'leases-after.json');
  const r = await runCollect(
    [...netnsArgv({ ephemeral: '9000 60999' }), 'sh', '-c', '"$0" "$1" up "$2" --run-dir "$3" --json; rc=$?; "$0" "$1" leases --json > "$4"; exit $rc', process.execPath, BERTH, b.stack, b.runDir, leasesFile],
    { env: { ...process.env, NO_COLOR: '1', BERTH_STATE_DIR: b.stateDir }, timeoutMs: 30_000 },
  );
  assert.equal(r.code, 0, r.stderr);
  const m = /sum (\d+) world 3 port (\d+)/.exec(r.stdout);
  assert.ok(m, r.stdout);
  assert.equal(Number(m[1]), 1 + 2);
  const port = Number(m[2]);
  assert.ok(port < 9000 || port > 60999, `shared port ${port} inside the ephemeral range 9000-60999`);
  const doc = endpoints(b);
  assert.deepEqual(doc.shared, { trainer: { host: '127.0.0.1', ports: { master: port } } });
  assert.match(r.stderr, /stack ready after [\d.]+s: nothing to wait for, the job starts/);
  assert.match(r.stderr, new RegExp(`\n  trainer shared master ${port} at 127\\.0\\.0\\.1\n`));
  const evs = events(b);
  for (const rank of [0, 1, 2]) assert.ok(evs.some((e) => e.service === 'trainer' && e.replica === rank && e.state === 'exited' && e.code === 0), `rank ${rank} exited 0`);
  // Its lease is given back with the stack.
  assert.deepEqual(JSON.parse(readFileSync(leasesFile, 'utf8')), []);
});

test('a failing rank ends the stack with its status; the other ranks are stopped, not left waiting', async (t) => {
  if (!requireNetns(t)) return;
  const b = stackBox(t, `
services:
  trainer:
    job: true
    replicas: 3
    stop_grace: 2s
    ports:
      master: shared
    command: [sh, -c, 'if [ "$BERTH_RANK" = 1 ]; then echo "rank 1: CUDA error: out of memory" >&2; sleep 0.5; exit 3; fi; exec sleep 60']
`);
  // A mark of this run only: other programs' `sleep 60` on the host are none of this test's.
  const mark = `BERTH_TEST_TAG=ranks-${process.pid}-${Math.random().toString(36).slice(2)}`;
  const t0 = Date.now();
  const r = await berth(['up', b.stack, '--run-dir', b.runDir], { netns: {}, env: { BERTH_STATE_DIR: b.stateDir, [mark.split('=')[0]!]: mark.split('=')[1]! } });
  const took = Date.now() - t0;
  assert.equal(r.code, 3, r.stderr);
  assert.ok(took < 10_000, `took ${took} ms: the other ranks were not stopped promptly`);
  assert.match(r.stderr, /trainer\/1 failed: rank 1 of 3 exited with status 3/);
  assert.match(r.stderr, /rank 1: CUDA error: out of memory/, 'the failing rank\'s stderr tail');
  assert.match(r.stderr, /diagnostics: .*trainer-1/);
  const evs = events(b);
  for (const rank of [0, 2]) assert.ok(evs.some((e) => e.replica === rank && e.state === 'stopping'), `rank ${rank} was stopped`);
  // berth has exited: no rank of its run is left (the ranks carry its environment; the
  // namespace helper's own clean-up loop carries it too, and ends by itself).
  const left = pidsWithEnv(mark).map(cmdline).filter((c) => c.startsWith('sleep 60'));
  assert.deepEqual(left, [], 'no rank left running');
});

test('rank 0 exiting first is not the end: the stack waits for every rank', async (t) => {
  if (!requireNetns(t)) return;
  const b = stackBox(t, `
services:
  trainer:
    job: true
    replicas: 3
    port: none
    command: [sh, -c, 'if [ "$BERTH_RANK" = 0 ]; then exit 0; fi; sleep 1; echo "rank $BERTH_RANK of $BERTH_WORLD_SIZE finished"']
`);
  const r = await upIn(b);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /rank 1 of 3 finished/);
  assert.match(r.stdout, /rank 2 of 3 finished/);
  const evs = events(b);
  assert.ok(at(evs, 'trainer/0', 'exited') < at(evs, 'trainer/1', 'exited'), 'rank 0 ended first');
  assert.ok(!evs.some((e) => e.state === 'stopping'), 'no rank was stopped');
});

test('the shared port is held by berth until rank 0 starts, then rank 0 binds it', async (t) => {
  if (!requireNetns(t)) return;
  // Rank 0 waits for a dependency that is slow to be ready; meanwhile the port is held.
  const b = stackBox(t, '');
  writeFileSync(
    b.stack,
    rendezvousStack(
      b.dir,
      `    depends_on: { gate: ready }
  gate:
    port: none
    command: [sh, -c, 'sleep 1.5; touch gate.ok; exec sleep 60']
    ready: 'cmd:test -f gate.ok'
`,
    ),
  );
  const script = `
set -e
${JSON.stringify(process.execPath)} ${JSON.stringify(BERTH)} up ${JSON.stringify(b.stack)} --run-dir ${JSON.stringify(b.runDir)} > ${b.dir}/out.txt 2> ${b.dir}/err.txt &
for i in $(seq 100); do [ -f ${b.runDir}/endpoints.json ] && grep -q '"shared"' ${b.runDir}/endpoints.json && break; sleep 0.05; done
port=$(${PY} -c 'import json,sys; print(json.load(open(sys.argv[1]))["shared"]["trainer"]["ports"]["master"])' ${b.runDir}/endpoints.json)
# While rank 0 has not started, the port is held: binding it fails.
${PY} -c 'import socket,sys; s=socket.socket(); s.bind(("0.0.0.0", int(sys.argv[1])))' $port 2>/dev/null && echo "bound-while-held" || echo "held $port"
wait
`;
  const r = await runCollect([...netnsArgv({}), 'sh', '-c', script], { env: { ...process.env, BERTH_STATE_DIR: b.stateDir }, timeoutMs: 30_000 });
  assert.match(r.stdout, /held \d+/, r.stdout + r.stderr);
  const out = readFileSync(join(b.dir, 'out.txt'), 'utf8');
  assert.match(out, /sum 3 world 3/, out + readFileSync(join(b.dir, 'err.txt'), 'utf8'));
});

test('stack files: what a job of many ranks and shared ports may not say', async (t) => {
  const cases: [string, RegExp][] = [
    [
      `services:\n  t:\n    replicas: 2\n    ports: { master: shared }\n    command: [echo, "{port}"]\n`,
      /service "t": command\[1\] uses \{port\}, but its only ports are shared; use \{ports\.master\}/,
    ],
    [
      `services:\n  t:\n    replicas: 2\n    ports: { master: shared }\n    command: [true]\n  c:\n    job: true\n    depends_on: { t: started }\n    command: [echo, "{t.port}"]\n`,
      /service "c": command\[1\] uses \{t\.port\}, but "t" has only shared ports; use \{t\.port\.master\} \(or \.host \/ \.hostport after it\)/,
    ],
    [`services:\n  t:\n    ports: { master: share }\n    command: [true]\n`, /port "master" must be 1 \(one port\), shared/],
    [`services:\n  t:\n    ports: { w: { block: window, shared: true } }\n    command: [true]\n`, /port "w": a shared block has a size/],
    [`services:\n  t:\n    ports: { d: { block: 4, shared: yes } }\n    command: [true]\n`, /port "d": shared must be true or false/],
    [`services:\n  t:\n    ports: { d: { shared: true, generations: always } }\n    command: [true]\n`, /port "d": generations must be fresh .* or keep, found/],
    [`services:\n  t:\n    ports: { d: { block: 4, generations: keep } }\n    command: [true]\n`, /port "d": generations is for a shared port .*; add shared: true/],
  ];
  for (const [yaml, re] of cases) {
    const r = await upIn(stackBox(t, yaml), null);
    assert.equal(r.code, 65, r.stderr);
    assert.match(r.stderr, re);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  }
});

test('config templates see each rank and the shared port', async (t) => {
  if (!requireNetns(t)) return;
  const b = stackBox(t, `
services:
  trainer:
    job: true
    replicas: 2
    ports:
      master: shared
    templates:
      conf: rank.conf.mustache
    command: [cat, "{templates.conf}"]
`);
  writeFileSync(join(b.dir, 'rank.conf.mustache'), 'rank={{rank}}/{{world_size}} local={{local_rank}} node={{node_rank}}/{{node_count}} master={{ports.master.hostport}} {keep}\n');
  const r = await upIn(b);
  assert.equal(r.code, 0, r.stderr);
  const port = endpoints(b).shared.trainer.ports.master;
  for (const rank of [0, 1]) {
    const text = readFileSync(join(b.runDir, 'data', `trainer-${rank}`, 'rank.conf'), 'utf8');
    assert.equal(text, `rank=${rank}/2 local=${rank} node=0/1 master=127.0.0.1:${port} {keep}\n`);
  }
});

test("a dependent reads a service's shared port: one value, even across replicas", async (t) => {
  if (!requireNeeds(t, NEED.curl)) return;
  if (!requireNetns(t)) return;
  const b = stackBox(t, `
services:
  server:
    replicas: 2
    ports: { http: shared, dist: shared }
    command: [sh, -c, 'if [ "$BERTH_REPLICA" = 0 ]; then exec ${PY} -m http.server "$BERTH_PORT_HTTP" --bind 127.0.0.1; fi; exec sleep 60']
    ready: "cmd:curl -fsS http://{ports.http.hostport}/"
  client:
    job: true
    depends_on: { server: ready }
    command: [sh, -c, 'curl -fsS -o /dev/null "http://$0/" && echo "reached $0 dist $1"', "{server.port.http.hostport}", "{server.port.dist}"]
`);
  const r = await upIn(b);
  assert.equal(r.code, 0, r.stderr);
  const shared = endpoints(b).shared.server;
  assert.match(r.stdout, new RegExp(`reached 127\\.0\\.0\\.1:${shared.ports.http} dist ${shared.ports.dist}`));
});

test('a shared block: one block of contiguous ports for every replica (SGLang binds after its --dist-init-addr port)', async (t) => {
  if (!requireNetns(t)) return;
  const b = stackBox(t, `
services:
  server:
    job: true
    replicas: 2
    ports:
      dist: { block: 4, shared: true }
    command: [sh, -c, 'echo "replica $BERTH_REPLICA dist {ports.dist.range} $BERTH_PORT_DIST_FIRST-$BERTH_PORT_DIST_LAST count $BERTH_PORT_DIST_COUNT at {ports.dist.hostport}"']
`);
  const r = await upIn(b, { ephemeral: '9000 60999' });
  assert.equal(r.code, 0, r.stderr);
  const dist = endpoints(b).shared.server.ports.dist;
  assert.equal(dist.count, 4);
  assert.equal(dist.last - dist.first, 3);
  assert.ok(dist.last < 9000 || dist.first > 60999, 'outside the ephemeral range');
  for (const rep of [0, 1]) assert.match(r.stdout, new RegExp(`replica ${rep} dist ${dist.first}-${dist.last} ${dist.first}-${dist.last} count 4 at 127\\.0\\.0\\.1:${dist.first}`));
});
