/**
 * `berth leases` output that another user's lease cannot subvert: names with ESC or newline
 * are escaped in the table and in exit-69 messages (issue 9 §5), and the user column.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { BERTH, tempStateDir } from './helpers/cli.js';
import { requireNetns, runInNetns } from './helpers/netns.js';

test('lease names with ESC or newline are escaped by berth leases and in the 69 message', async (t) => {
  if (!requireNetns(t)) return;
  const state = tempStateDir();
  try {
    const name = 'evil\x1b[2J\nPORT 1 live root';
    const script = [
      `"$NODE" "$BERTH" port --port 24800 --ttl 1m --name "$NAME" >/dev/null`,
      `"$NODE" "$BERTH" leases`,
      `"$NODE" "$BERTH" port --port 24800 --ttl 1m 2>&1 >/dev/null; true`,
    ].join('\n');
    const r = await runInNetns({}, ['sh', '-c', script], { env: { ...process.env, NODE: process.execPath, BERTH, NAME: name, BERTH_STATE_DIR: state } });
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /\x1b/);
    const lines = r.stdout.trim().split('\n');
    assert.match(lines[0]!, /^PORT +STATE +USER +HOLDER +OWNER +NAME$/);
    assert.match(lines[1]!, /^24800 +live +root +\d+ +expires in \d+s +evil\\x1b\[2J\\x0aPORT 1 live root$/);
    assert.match(lines[2]!, /port 24800 is not available: 24800 leased to no owner pid \(expiry only\) "evil\\x1b\[2J\\x0aPORT 1 live root"/);
    assert.equal(lines.length, 3, 'the name cannot add a line');
  } finally {
    rmSync(state, { recursive: true, force: true });
  }
});

test('berth leases says no creation time (null, never 1970) for a record without at= and for a set in progress', async (t) => {
  if (!requireNetns(t)) return;
  // Another implementation's record may leave out at=; a port name without a record is a set in progress.
  const hold = `
import os, socket, sys, time
def bind(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(b'\\0' + name.encode().ljust(107, b'\\0'))
    s.listen(1)
    return s
me = os.getpid()
keep = [bind('berth/v1/p/24801'), bind('berth/v1/p/24802'),
        bind(f'berth/v1/r/noatrecord/0/1/uid=0/pid={me}/owner={me}/kind=single/ports=24801/name=noat')]
print('ready', flush=True)
time.sleep(60)
`;
  const script = [
    `/usr/bin/python3 -c "$HOLD" > /tmp/noat-$$ & H=$!`,
    `until grep -q ready /tmp/noat-$$; do sleep 0.01; done`,
    `"$NODE" "$BERTH" leases --json`,
    `echo ---`,
    `"$NODE" "$BERTH" leases`,
    `kill $H; rm -f /tmp/noat-$$`,
  ].join('\n');
  const r = await runInNetns({}, ['sh', '-c', script], { env: { ...process.env, NODE: process.execPath, BERTH, HOLD: hold } });
  assert.equal(r.code, 0, r.stderr);
  const [json, text] = r.stdout.split('\n---\n') as [string, string];
  const leases = JSON.parse(json) as { port: number; state: string; name?: string; createdAt: unknown }[];
  const byPort = new Map(leases.map((l) => [l.port, l]));
  assert.equal(byPort.get(24801)?.state, 'live');
  assert.equal(byPort.get(24801)?.name, 'noat');
  assert.equal(byPort.get(24801)?.createdAt, null);
  assert.equal(byPort.get(24802)?.state, 'pending');
  assert.equal(byPort.get(24802)?.createdAt, null);
  assert.doesNotMatch(text, /1970/);
});
