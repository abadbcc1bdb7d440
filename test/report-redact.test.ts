/**
 * Issue 22 §6: the command lines of the processes doctor and inspect show are other users'
 * (and go into tickets as HTML and JSON), so they get the diagnostics' redaction
 * (src/util/redact.ts): a listener started with `--db-password=X postgres://u:Y@h --token Z`
 * shows none of X, Y, Z in `inspect`, `inspect --json`, `doctor --json` or `doctor --html`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { describeStranger } from '../src/launch/ownership.js';
import { commandOf } from '../src/launch/tree-listeners.js';
import { berth, tempStateDir } from './helpers/cli.js';

const SECRETS = ['pw-hunter2-X', 'pw-hunter2-Y', 'tok-hunter2-Z'];
const LISTENER = `const s = require('net').createServer().listen(0, '127.0.0.1', () => console.log(s.address().port)); setTimeout(() => process.exit(0), 60000);`;

test('doctor and inspect show a listener\'s command line redacted, in text, JSON and HTML', async (t) => {
  const child = spawn(process.execPath, ['-e', LISTENER, '--', `--db-password=${SECRETS[0]}`, `postgres://u:${SECRETS[1]}@h/db`, '--token', SECRETS[2]!], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => child.kill('SIGKILL'));
  const [line] = (await once(child.stdout.setEncoding('utf8'), 'data')) as [string];
  const port = Number(line.trim());
  assert.ok(port > 0);
  const env = { BERTH_STATE_DIR: tempStateDir() };
  const html = join(mkdtempSync(join(tmpdir(), 'berth-redact-')), 'r.html');
  const runs = {
    inspect: await berth(['inspect', '--port', String(port)], { env }),
    'inspect --json': await berth(['inspect', '--port', String(port), '--json'], { env }),
    'doctor --json': await berth(['doctor', '--range', `${port}-${port}`, '--json'], { env }),
    'doctor --html': await berth(['doctor', '--range', `${port}-${port}`, '--html', html], { env }),
  };
  for (const [what, r] of Object.entries(runs)) {
    assert.ok(r.code === 0 || (what.startsWith('doctor') && r.code === 1), `${what}: ${r.stderr}`);
    const shown = what === 'doctor --html' ? readFileSync(html, 'utf8') : r.stdout;
    assert.match(shown, /redacted/, `${what} shows the listener, redacted`);
    assert.match(shown, /db-password=/, `${what} keeps the flag's name`);
    for (const s of SECRETS) assert.ok(!shown.includes(s) && !r.stderr.includes(s), `${what} must not show ${s}`);
  }
});

test('a stranger on a service\'s port is described with its command line redacted', () => {
  const text = describeStranger({
    row: { family: 4, localAddress: '127.0.0.1', localPort: 8000 } as never,
    owners: [{ pid: 42, comm: 'srv', cmdline: ['srv', '--token', 'tok-hunter2-Z', `--db-password=${SECRETS[0]}`] }],
  } as never);
  assert.match(text, /pid 42 \(srv --token <redacted> --db-password=<redacted>\)/);
});

test('a stray listener of the service\'s tree (warnings, endpoints.json) is shown with its command line redacted', async (t) => {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)', '--', '--token', SECRETS[2]!, `postgres://u:${SECRETS[1]}@h/db`], { stdio: 'ignore' });
  t.after(() => child.kill('SIGKILL'));
  await once(child, 'spawn');
  const text = commandOf('/proc', child.pid!);
  assert.ok(text, 'a command line');
  assert.match(text, /--token <redacted> postgres:\/\/<redacted>@h\/db/);
  for (const s of SECRETS) assert.ok(!text.includes(s), text);
});
