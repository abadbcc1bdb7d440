/**
 * Issue 32 item 7: a lease made with --owner and --ttl is held by `timeout DUR tail --pid=…`,
 * two processes holding the same sockets (timeout and the tail it runs). release --port,
 * release --owner (the job-script trap) and a normal user's release --all must end it whole:
 * no "held by pid N (tail …), not a lease holder", no names left behind. In a network
 * namespace made for the test, with a real second user.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BERTH } from './helpers/cli.js';
import { requireNetns, runInNetns } from './helpers/netns.js';
import { asUser, throwawayUser } from './helpers/users.js';

test('an --owner --ttl lease (timeout + tail) is released by --port, by --owner and by its user’s --all, leaving no name', async (t) => {
  if (process.getuid?.() !== 0) {
    if (process.env.CI) throw new Error('this test must run as root in CI');
    t.skip('needs root (to run berth as a second user)');
    return;
  }
  if (!requireNetns(t)) return;
  const user = throwawayUser('berthvictim');
  const env = { ...process.env, NODE: process.execPath, BERTH, AS: asUser(user).join(' '), NO_COLOR: '1' };
  const r = await runInNetns(
    {},
    [
      'bash',
      '-c',
      `names() { grep -c '@berth/v1/' /proc/net/unix; }
      sleep 600 & O=$!
      "$NODE" "$BERTH" port --port 23000 --owner $O --ttl 5m >/dev/null
      echo "LISTED=$("$NODE" "$BERTH" leases --json | "$NODE" -e 'const l=JSON.parse(require("fs").readFileSync(0,"utf8"));console.log(l.map((x)=>x.port+":"+x.holders.map((h)=>(h.holder?"holder":"other")+"/"+h.command.split(" ")[0]).join(",")).join(" "))')"
      echo "PORT=$("$NODE" "$BERTH" release --port 23000 2>&1 | tr '\\n' ' ')NAMES=$(names)"
      "$NODE" "$BERTH" port --port 23001 --owner $O --ttl 5m >/dev/null
      echo "OWNER=$("$NODE" "$BERTH" release --owner $O 2>&1 | tr '\\n' ' ')NAMES=$(names)"
      kill $O
      echo "ALL=$($AS bash -c '"$NODE" "$BERTH" port --port 23002 --owner $$ --ttl 5m >/dev/null; "$NODE" "$BERTH" release --all 2>&1' | tr '\\n' ' ')NAMES=$(names)"`,
    ],
    { env, timeoutMs: 60_000 },
  );
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
  // berth leases shows both processes as the lease's holder (timeout and the tail it runs).
  assert.match(r.stdout, /^LISTED=23000:holder\/berth-lease-holder,holder\/(?:\/usr\/bin\/|\/bin\/)?tail$/m, r.stdout);
  assert.match(r.stdout, /^PORT=released 23000 NAMES=0$/m, r.stdout);
  assert.match(r.stdout, /^OWNER=released 23001 NAMES=0$/m, r.stdout);
  assert.match(r.stdout, /^ALL=released 23002 NAMES=0$/m, r.stdout);
});
