/**
 * Issue 22 §20: messages that said something false or dumped a file. A broken `templates:`
 * key is reported once (no invented "the service has no templates:" line); a UTF-16, Latin-1
 * or NUL-holding stack, layout or template is refused (65) with the byte offset instead of
 * being read as U+FFFD or quoted whole; any text quoted from a file is a short, redacted
 * excerpt; a program behind a directory the user may not enter is named as such; and
 * SLURM_STEP_RESV_PORTS without a job is not "not set".
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BerthError, EXIT } from '../src/errors.js';
import { stepResvPorts } from '../src/slurm/instance.js';
import { loadStack, parseStack } from '../src/stack/file/load.js';
import { decodeText } from '../src/util/text-bytes.js';
import { BERTH, tempStateDir } from './helpers/cli.js';
import { runCollect } from './helpers/netns.js';

const dir = () => mkdtempSync(join(tmpdir(), 'berth-msg-'));

function refusal(read: () => unknown): string {
  try {
    read();
  } catch (e) {
    assert.ok(e instanceof BerthError, String(e));
    assert.equal(e.exitCode, EXIT.DATAERR, e.message);
    return e.message;
  }
  assert.fail('accepted');
}

test('a broken templates: key is reported once, without a false "has no templates:" line', () => {
  const d = dir();
  writeFileSync(join(d, 'ok.mustache'), 'x\n');
  for (const key of ['[c]', '{ c: 5 }', '{ c: nope.mustache }', '{ "c d": ok.mustache }']) {
    const msg = refusal(() => parseStack(`services:\n  a:\n    command: [cat, "{templates.c}"]\n    templates: ${key}\n`, 's.yaml', d));
    assert.doesNotMatch(msg, /has no "templates:"/, key);
    assert.equal(msg.split('\n').length, 1, `${key}: ${msg}`);
    assert.match(msg, /^s\.yaml:4: /, key);
  }
  // Still said when there is no templates: key at all.
  assert.match(refusal(() => parseStack('services:\n  a:\n    command: [cat, "{templates.c}"]\n', 's.yaml', d)), /has no "templates:"/);
});

test('UTF-16, Latin-1 and NUL-holding files are refused (65) with the byte offset, never read as U+FFFD', () => {
  const d = dir();
  const utf16 = join(d, 'u16.yaml');
  writeFileSync(utf16, Buffer.from('\ufeffservices:\n  a:\n    command: [sleep, "1"]\n', 'utf16le'));
  assert.match(refusal(() => loadStack(utf16)), /u16\.yaml: cannot read stack file: it is UTF-16 text .*save it as UTF-8$/);
  const latin1 = join(d, 'l1.yaml');
  writeFileSync(latin1, Buffer.concat([Buffer.from('services:\n  a:\n    command: [echo, "caf'), Buffer.from([0xe9]), Buffer.from('"]\n')]));
  assert.match(refusal(() => loadStack(latin1)), /l1\.yaml: cannot read stack file: it is not UTF-8 text: byte 40 \(0xe9\) starts no UTF-8 character/);
  // A template of binary bytes: refused at load, naming the byte.
  writeFileSync(join(d, 'bin.mustache'), Buffer.from([0x61, 0x62, 0xff, 0xfe, 0x00]));
  const tpl = join(d, 'tpl.yaml');
  writeFileSync(tpl, 'services:\n  a:\n    command: [cat, "{templates.c}"]\n    templates: { c: bin.mustache }\n');
  assert.match(refusal(() => loadStack(tpl)), /bin\.mustache: it is not UTF-8 text: byte 3 \(0xff\)/);
  assert.deepEqual(decodeText(Buffer.from('ok ✓\n')), { text: 'ok ✓\n' });
  assert.deepEqual(decodeText(Buffer.from('a\0b')), { problem: 'it is not UTF-8 text: byte 2 is a NUL byte (UTF-16 or binary?)' });
});

test('layout: /proc/self/environ is refused in one short line that quotes none of the environment', () => {
  const d = dir();
  const file = join(d, 's.yaml');
  writeFileSync(file, 'layout: /proc/self/environ\nservices:\n  a:\n    command: [sleep, "1"]\n');
  const msg = refusal(() => loadStack(file));
  assert.ok(msg.length < 300, msg);
  assert.doesNotMatch(msg, /PATH=|HOME=/);
  assert.match(msg, /\/proc\/self\/environ.*NUL byte/);
});

test('text quoted from a file is a short, redacted excerpt', () => {
  const long = `${'x'.repeat(3000)} --token=hunter2-secret`;
  const msg = refusal(() => parseStack(`services:\n  a:\n    command: "--api-key=hunter2-key ${long}"\n`, 's.yaml', dir()));
  assert.ok(msg.length < 400, `${msg.length} characters`);
  assert.doesNotMatch(msg, /hunter2/);
  assert.match(msg, /found the text "--api-key=<redacted> xxx.*…" \(3045 characters\)/);
});

test('SLURM_STEP_RESV_PORTS without SLURM_JOB_ID is said as such, not "not set"', () => {
  assert.throws(
    () => stepResvPorts({ SLURM_STEP_RESV_PORTS: '20000-20003' }),
    (e: unknown) => e instanceof BerthError && e.exitCode === EXIT.USAGE && /SLURM_STEP_RESV_PORTS is set \("20000-20003"\) but SLURM_JOB_ID is not/.test(e.message) && !/is not set/.test(e.message),
  );
  assert.throws(() => stepResvPorts({}), /SLURM_STEP_RESV_PORTS is not set in this process/);
});

function asOtherUser(t: TestContext): string[] | undefined {
  if (process.getuid?.() !== 0) return []; // as an ordinary user the test is that user
  return ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];
}

test('a 0755 program in a directory the user may not enter: the directory is named, not "chmod +x"', async (t) => {
  const prefix = asOtherUser(t);
  if (!prefix) return;
  const d = dir();
  chmodSync(d, 0o755);
  const closed = join(d, 'closed');
  mkdirSync(closed, { mode: 0o700 });
  const prog = join(closed, 'prog');
  writeFileSync(prog, '#!/bin/sh\necho hi\n', { mode: 0o755 });
  const state = tempStateDir();
  if (prefix.length > 0) chownSync(state, 65534, 65534);
  const r = await runCollect([...prefix, process.execPath, BERTH, 'run', '--', prog], { env: { ...process.env, BERTH_STATE_DIR: state } });
  assert.equal(r.code, 64, r.stderr);
  assert.match(r.stderr, new RegExp(`cannot be reached: you may not enter the directory ${closed} `));
  assert.doesNotMatch(r.stderr, /chmod \+x/);
});
