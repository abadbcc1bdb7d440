/**
 * Issue 32 item 2 with a real container runtime: the checks of owner-pid-namespaces.test.ts
 * (made there with `unshare --pid`), in podman containers (helpers/podman.ts: this host's /
 * as the root, `--network host` inside a network namespace of the test). In a container
 * berth is pid 1 and its threads are 2…, so `--owner 5` names a thread, not a process: 64.
 * A `release --owner N` outside must leave a container's lease whose inner owner is N.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { BERTH } from './helpers/cli.js';
import { requireNetns, runInNetns } from './helpers/netns.js';
import { podmanRunArgv, removePodmanContainers, requirePodman } from './helpers/podman.js';

const LABEL = `owner-pidns-${process.pid}`;
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
const env = { ...process.env, NODE: process.execPath, BERTH, NO_COLOR: '1' };
const dirs: string[] = [];
after(() => {
  removePodmanContainers(LABEL);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** bash that defines `P …` as "run … in a fresh podman container", then runs `script`, in a network namespace of the test. */
function sh(script: string, shared: string[] = []) {
  const argv = podmanRunArgv({ shared, env: { NODE: process.execPath, BERTH, NO_COLOR: '1' }, label: LABEL });
  return runInNetns({}, ['bash', '-c', `P() { ${argv.map(q).join(' ')} "$@"; }\n${script}`], { env, timeoutMs: 180_000 });
}

test('podman: --owner that is a thread of berth (pid 1 in the container) or berth itself is refused with 64; the container’s shell is taken', async (t) => {
  if (!requireNetns(t) || !requirePodman(t)) return;
  const r = await sh(`
    for n in 1 2 3 4 5 6 7 8; do
      out=$(P "$NODE" "$BERTH" port --range 22000-22009 --owner $n 2>&1); rc=$?
      echo "OWNER $n RC=$rc $(echo "$out" | head -1)"
    done
    echo "SHELL $(P bash -c '"$NODE" "$BERTH" port --range 22000-22009 --owner 1; echo RC=$?' | tr '\\n' ' ')"
    "$NODE" "$BERTH" release --all >/dev/null; true`);
  assert.equal(r.code, 0, r.stderr);
  for (let n = 1; n <= 8; n++) {
    const m = new RegExp(`^OWNER ${n} RC=(\\d+) (.*)$`, 'm').exec(r.stdout);
    assert.ok(m, `${r.stdout}\n${r.stderr}`);
    assert.equal(m[1], '64', `--owner ${n} in a podman container (berth is pid 1, its threads 2…): ${m[2]}`);
    assert.match(m[2]!, /is a thread of process 1|is this berth process itself|is not a running process/, m[2]);
  }
  assert.match(r.stdout, /^SHELL 22000 RC=0 $/m, r.stdout);
});

test('podman: release --owner N outside leaves the container’s lease whose inner owner is N; inside, it ends it', async (t) => {
  if (!requireNetns(t) || !requirePodman(t)) return;
  const d = mkdtempSync(join(tmpdir(), 'berth-podman-'));
  dirs.push(d);
  const r = await sh(
    `D=${q(d)}; mkfifo "$D/go"
    P bash -c '
      sleep 600 & O=$!
      "$NODE" "$BERTH" port --port 22100 --owner $O >/dev/null || exit 9
      echo "$O $(readlink /proc/self/ns/pid)" > "$1/owner.tmp"; mv "$1/owner.tmp" "$1/owner"
      read x < "$1/go"
      echo "INNER=$("$NODE" "$BERTH" release --owner $O)"
      kill $O' inner "$D" > "$D/inner.out" 2>&1 &
    C=$!
    while [ ! -s "$D/owner" ] && kill -0 $C 2>/dev/null; do sleep 0.05; done
    read O NS < "$D/owner"; echo "INNER_OWNER=$O $NS"; echo "OUTER_NS=$(readlink /proc/self/ns/pid)"
    echo "OUTER=$("$NODE" "$BERTH" release --owner $O 2>&1)"
    echo "LIVE=$(grep -c '@berth/v1/p/22100@' /proc/net/unix)"
    echo "LISTED=$("$NODE" "$BERTH" leases | grep 22100)"
    echo go > "$D/go"; wait $C; echo "CONTAINER_RC=$?"
    cat "$D/inner.out"
    echo "END=$(grep -c '@berth/v1/p/22100@' /proc/net/unix)"`,
    [d],
  );
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
  const inner = /^INNER_OWNER=(\d+) (\S+)$/m.exec(r.stdout);
  assert.ok(inner, `${r.stdout}\n${r.stderr}`);
  assert.notEqual(inner[2], /^OUTER_NS=(\S+)$/m.exec(r.stdout)?.[1], 'the container has a PID namespace of its own');
  assert.doesNotMatch(/^OUTER=(.*)$/m.exec(r.stdout)?.[1] ?? '', /released/, r.stdout);
  assert.match(r.stdout, /^LIVE=1$/m, `the container’s lease outlives the outside release --owner ${inner[1]}:\n${r.stdout}`);
  assert.match(r.stdout, /^LISTED=.*owner pid \d+ of another PID namespace/m, 'berth leases outside says the owner pid is not this namespace’s');
  assert.match(r.stdout, /^CONTAINER_RC=0$/m, r.stdout);
  assert.match(r.stdout, /^INNER=released 22100$/m, r.stdout);
  assert.match(r.stdout, /^END=0$/m, r.stdout);
});
