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
