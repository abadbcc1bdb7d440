/**
 * A failed service's last lines reach the terminal through berth's failure report: terminal
 * escape codes and other controls in them are shown escaped (\x1b…), as names already are,
 * so a service cannot clear the screen, retitle the window or forge lines of the report
 * (issue 32 §10).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { box, up } from './fixtures/up/harness.js';

test('berth up failure report: escape codes in the service stderr and stdout are escaped', async (t) => {
  if (!requireNetns(t)) return;
  const evil = String.raw`printf 'out \033]0;pwned\007 title\n'; printf 'boom \033[2J\033[31mred\033[0m \302\233c bidi \342\200\256gnp.exe\n' >&2; exit 3`;
  const b = box(`
services:
  evil:
    range: 20000-20099
    command: [sh, -c, ${JSON.stringify(evil)}]
    ready: tcp
`);
  t.after(() => b.cleanup());
  const r = await up(b).result;
  assert.equal(r.code, 70, r.stderr);
  assert.match(r.stderr, /last lines of evil\/0's stderr:\n {4}boom \\x1b\[2J\\x1b\[31mred\\x1b\[0m \\x9bc bidi \\u202egnp\.exe\n/, r.stderr);
  assert.match(r.stderr, /last lines of evil\/0's stdout:\n {4}out \\x1b\]0;pwned\\x07 title\n/, r.stderr);
  assert.doesNotMatch(r.stderr, /[\x1b\x07\x9b\u202e]/, 'no raw control reaches the terminal');
});
