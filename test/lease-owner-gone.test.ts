/**
 * A lease whose recorded owner has died is about to end, not taken (issue 28 §4): its holder
 * (`tail --pid`) looks every 0.2 s, so a `berth port` for the same port right after the owner
 * ends retries within its contention budget instead of exiting 69 "leased to pid N". When the
 * lease stays (a forged record, a holder that never lets go) the 69 message says "owner gone".
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BERTH } from './helpers/cli.js';
import { requireNetns, runInNetns } from './helpers/netns.js';

const env = () => ({ ...process.env, NODE: process.execPath, BERTH, NO_COLOR: '1' });

test('berth port right after a lease owner ends gets the port (retried as contention), five times in a row', async (t) => {
  if (!requireNetns(t)) return;
  const script = `
for k in 0 1 2 3 4; do
  P=$((10105 + k))
  sleep 60 & O=$!
  "$NODE" "$BERTH" port --port $P --owner $O >/dev/null || echo "FIRST_$k=failed"
  kill $O; wait $O 2>/dev/null
  out=$("$NODE" "$BERTH" port --port $P --ttl 1m 2>&1); echo "RC_$k=$? $out"
done
`;
  const r = await runInNetns({}, ['sh', '-c', script], { env: env(), timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stdout, /FIRST_/, r.stdout);
  for (let k = 0; k < 5; k++) assert.match(r.stdout, new RegExp(`^RC_${k}=0 ${10105 + k}$`, 'm'), r.stdout);
});

test('a lease whose owner is gone but that stays held fails after the contention budget, saying "owner gone"', async (t) => {
  if (!requireNetns(t)) return;
  // A record whose owner no longer exists, with its port name held by a process that never lets go.
  const hold = `
import os, socket, sys, time
def bind(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(b'\\0' + name.encode().ljust(107, b'\\0'))
    s.listen(1)
    return s
dead = int(sys.argv[1])
keep = [bind('berth/v1/p/10120'), bind(f'berth/v1/r/ownergone01/0/1/uid=0/pid={os.getpid()}/owner={dead}/kind=single/ports=10120/name=stuck')]
print('ready', flush=True)
time.sleep(60)
`;
  const script = `
D=$(sh -c 'echo $$')
/usr/bin/python3 -c "$HOLD" $D > /tmp/ownergone-$$ & H=$!
until grep -q ready /tmp/ownergone-$$; do sleep 0.01; done
start=$(date +%s%N)
"$NODE" "$BERTH" port --port 10120 --ttl 1m; echo "RC=$?"
echo "MS=$(( ($(date +%s%N) - start) / 1000000 ))"
echo "DEAD=$D"
kill $H; rm -f /tmp/ownergone-$$
`;
  const r = await runInNetns({}, ['sh', '-c', script], { env: { ...env(), HOLD: hold }, timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^RC=69$/m, r.stdout + r.stderr);
  const dead = /^DEAD=(\d+)$/m.exec(r.stdout)![1];
  assert.match(r.stderr, new RegExp(`10120 leased to pid ${dead} \\(owner gone`), r.stderr);
  // Retried: it waited for the contention budget (2.5 s) before giving up.
  const ms = Number(/^MS=(\d+)$/m.exec(r.stdout)![1]);
  assert.ok(ms >= 2000, `gave up after ${ms} ms, without retrying`);
});
