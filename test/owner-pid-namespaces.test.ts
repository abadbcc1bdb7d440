/**
 * Issue 32 item 2: a pid means something only in its PID namespace. In a fresh one
 * (`unshare --pid --fork --mount-proc`, as podman or enroot --pid make), berth port --owner
 * must refuse (64) a number that is one of berth's own threads, and a release --owner N
 * from outside must not end a lease made inside whose inner owner is N; inside, it does.
 * All in a network namespace made for the test.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BERTH } from './helpers/cli.js';
import { requireNetns, runInNetns } from './helpers/netns.js';

const env = { ...process.env, NODE: process.execPath, BERTH, NO_COLOR: '1' };
const sh = (script: string) => runInNetns({}, ['bash', '-c', script], { env, timeoutMs: 120_000 });

test('in a fresh PID namespace, --owner that is a thread of berth (or berth itself) is refused with 64; a process is taken', async (t) => {
  if (!requireNetns(t)) return;
  const r = await sh(`
    for n in 1 2 3 4 5 6 7 8; do
      out=$(unshare --pid --fork --mount-proc "$NODE" "$BERTH" port --range 22000-22009 --owner $n 2>&1); rc=$?
      echo "OWNER $n RC=$rc $(echo "$out" | head -1)"
    done
    # A shell as pid 1 and berth beside it: the shell is a process of the namespace.
    echo "SHELL $(unshare --pid --fork --mount-proc bash -c '"$NODE" "$BERTH" port --range 22000-22009 --owner 1; echo RC=$?' | tr '\\n' ' ')"
    "$NODE" "$BERTH" release --all >/dev/null; true`);
  assert.equal(r.code, 0, r.stderr);
  for (let n = 1; n <= 8; n++) {
    const m = new RegExp(`^OWNER ${n} RC=(\\d+) (.*)$`, 'm').exec(r.stdout);
    assert.ok(m, r.stdout);
    assert.equal(m[1], '64', `--owner ${n} in a fresh pid namespace (berth is pid 1, its threads 2…): ${m[2]}`);
    assert.match(m[2]!, /is a thread of process 1|is this berth process itself|is not a running process/, m[2]);
  }
  assert.match(r.stdout, /^SHELL 22000 RC=0 $/m, r.stdout);
});

test('release --owner N from outside a PID namespace leaves the lease whose inner owner is N; from inside it ends it', async (t) => {
  if (!requireNetns(t)) return;
  const r = await sh(`
    D=$(mktemp -d); mkfifo "$D/go"
    unshare --pid --fork --mount-proc bash -c '
      sleep 600 & O=$!
      "$NODE" "$BERTH" port --port 22100 --owner $O >/dev/null || exit 9
      echo $O > "$1/owner.tmp"; mv "$1/owner.tmp" "$1/owner"
      read x < "$1/go"
      echo "INNER=$("$NODE" "$BERTH" release --owner $O)"
      kill $O' inner "$D" > "$D/inner.out" 2>&1 &
    C=$!
    while [ ! -s "$D/owner" ] && kill -0 $C 2>/dev/null; do sleep 0.05; done
    O=$(cat "$D/owner"); echo "INNER_OWNER=$O"
    echo "OUTER=$("$NODE" "$BERTH" release --owner $O 2>&1)"
    echo "LIVE=$(grep -c '@berth/v1/p/22100@' /proc/net/unix)"
    echo "LISTED=$("$NODE" "$BERTH" leases | grep 22100)"
    echo go > "$D/go"; wait $C
    cat "$D/inner.out"
    echo "END=$(grep -c '@berth/v1/p/22100@' /proc/net/unix)"
    rm -rf "$D"`);
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /^INNER_OWNER=\d+$/m, r.stdout);
  assert.doesNotMatch(/^OUTER=(.*)$/m.exec(r.stdout)?.[1] ?? '', /released/, r.stdout);
  assert.match(r.stdout, /^LIVE=1$/m, 'the container’s lease outlives the outside release --owner');
  assert.match(r.stdout, /^LISTED=.*owner pid \d+ of another PID namespace/m, 'berth leases outside says the owner pid is not this namespace’s');
  assert.match(r.stdout, /^INNER=released 22100$/m, r.stdout);
  assert.match(r.stdout, /^END=0$/m);
});
