/**
 * `berth port` whose ports cannot be written leaves no lease behind (issue 32 §5): with stdout
 * closed or on /dev/full, in every output format and shape, it exits 74 and the port's lease
 * is gone, so nobody holds a port that nobody knows.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BERTH } from './helpers/cli.js';
import { requireNetns, runInNetns } from './helpers/netns.js';

test('berth port with stdout closed or on /dev/full exits 74 and leaves no lease', async (t) => {
  if (!requireNetns(t)) return;
  const cases = [
    ['closed', '--port 20001 --ttl 1m', '>&-'],
    ['full', '--port 20002 --ttl 1m', '>/dev/full'],
    ['fulljson', '--port 20003 --ttl 1m --json', '>/dev/full'],
    ['fullenv', '--range 20004-20010 --count 2 --ttl 1m --format env', '>/dev/full'],
    ['fullset', '--range 20011-20020 --ports a,b=block:2 --ttl 1m', '>/dev/full'],
    ['fullblock', '--range 20021-20030 --block 3 --owner $$', '>/dev/full'],
    ['closedowner', '--port 20031 --owner $$', '>&-'],
  ];
  const script = [
    ...cases.map(([k, args, redir]) => `"$NODE" "$BERTH" port ${args} ${redir} 2>/tmp/unwritable-$$; echo "RC_${k}=$? $(head -c 300 /tmp/unwritable-$$ | tr '\\n' ' ')"`),
    `echo "LEFT=$(grep -o '@berth/v1/[a-z]/[^ ]*' /proc/net/unix | sed 's/@*$//' | tr '\\n' ' ')"`,
    // Still fine: stdout discarded on purpose, or a pipe.
    `"$NODE" "$BERTH" port --port 20040 --ttl 1m >/dev/null; echo "RC_null=$?"`,
    `echo "PIPE=$("$NODE" "$BERTH" port --port 20041 --ttl 1m)"`,
    'rm -f /tmp/unwritable-$$',
  ].join('\n');
  const r = await runInNetns({}, ['sh', '-c', script], { env: { ...process.env, NODE: process.execPath, BERTH, NO_COLOR: '1' }, timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  for (const [k] of cases) {
    const line = new RegExp(`^RC_${k}=(\\d+) (.*)$`, 'm').exec(r.stdout);
    assert.ok(line, r.stdout);
    assert.equal(line[1], '74', `${k}: ${line[2]}`);
    assert.match(line[2]!, /stdout/, `${k}: the message says what could not be written`);
    assert.match(line[2]!, /given back|nothing was leased/, k);
    assert.doesNotMatch(line[2]!, /\n\s+at /, `${k}: no stack trace`);
  }
  assert.match(r.stdout, /^LEFT= ?$/m, `no lease name is left\n${r.stdout}`);
  assert.match(r.stdout, /^RC_null=0$/m, r.stdout);
  assert.match(r.stdout, /^PIPE=20041$/m, r.stdout);
});
