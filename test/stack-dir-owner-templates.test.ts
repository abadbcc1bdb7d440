/**
 * `dir_owner:` with what goes into the directory it gives away (issue 32 §13): an unknown
 * user is exit 65 naming the stack file and line, before anything starts; a rendered
 * template lands in the replica's directory readable by that user, owned by it, and is
 * rendered again (same owner) before each restart.
 */
import assert from 'node:assert/strict';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { requireNetns } from './helpers/netns.js';
import { box, up } from './fixtures/up/harness.js';

test('dir_owner naming a user the host does not know: 65 with file:line, before anything starts', async (t) => {
  if (!requireNetns(t)) return;
  const b = box(`
services:
  w:
    range: 20000-20099
    command: [sleep, "30"]
    dir_owner: no-such-user-berth
    ready: tcp
`);
  t.after(() => b.cleanup());
  const r = await up(b).result;
  assert.equal(r.code, 65, r.stderr);
  assert.match(r.stderr, /stack\.yaml:6: service "w": dir_owner no-such-user-berth: there is no user "no-such-user-berth" on this host/, r.stderr);
  assert.doesNotMatch(r.stderr, /pending|starting/, 'nothing was leased or started');
});

test('dir_owner with a template: the rendered file is the user\'s, readable by it, and stays so across a restart', async (t) => {
  if (!requireNetns(t)) return;
  if (process.getuid?.() !== 0) {
    if (process.env.CI === 'true') assert.fail('dir_owner needs root in CI');
    t.skip('SKIP: dir_owner needs berth to run as root');
    return;
  }
  const script = 'cat "$0" >> "$1/seen" || exit 9; if [ ! -f "$1/once" ]; then touch "$1/once"; exit 1; fi; exec python3 -m http.server --bind 127.0.0.1 "$2"';
  const b = box(`
services:
  w:
    range: 20000-20099
    dir_owner: nobody
    restart: on-failure
    restart_limit: 2
    templates: { conf: conf.tmpl }
    command: [setpriv, --reuid=nobody, --regid=nogroup, --clear-groups, sh, -c, ${JSON.stringify(script)}, "{templates.conf}", "{dir}", "{port}"]
    ready: tcp
`);
  t.after(() => b.cleanup());
  writeFileSync(join(b.dir, 'conf.tmpl'), 'port={{port}} replica={{replica}}\n');
  chmodSync(b.dir, 0o711); // nobody must pass through the box to its directory
  const u = up(b);
  await u.waitStderr(/w\/0 ready/, 20_000);
  const dir = join(b.runDir, 'data', 'w-0');
  const rendered = statSync(join(dir, 'conf'));
  assert.equal(rendered.uid, 65534, 'the rendered file is the dir_owner\'s');
  assert.equal(rendered.mode & 0o004, 0o004, 'readable');
  const seen = readFileSync(join(dir, 'seen'), 'utf8').trim().split('\n');
  assert.equal(seen.length, 2, `read by nobody before the first start and before the restart:\n${u.stderr()}`);
  assert.match(seen[1]!, /^port=\d+ replica=0$/);
  u.child.kill('SIGTERM');
  const r = await u.result;
  assert.equal(r.code, 143, r.stderr);
});
