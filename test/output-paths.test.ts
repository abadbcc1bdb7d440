/**
 * Issue 22 §1 and §11, the files and streams berth writes on a user's behalf: an output path
 * (`inspect --html`, `doctor --html`, `run --ready-file`) that names a device, a FIFO, a
 * directory, a symlink or another user's file is refused (74) and left as it was; a regular
 * file of the caller's is replaced by a rename (a new inode, never half written). And a
 * reader that goes away (`berth inspect | head -1`) ends berth's output, not berth.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkReplaceable, removeReplaceable, writeFileAtomic } from '../src/util/atomic-write.js';
import { UnsafeFileError } from '../src/util/safe-file.js';
import { berth, BERTH, tempStateDir } from './helpers/cli.js';

const fresh = () => mkdtempSync(join(tmpdir(), 'berth-outputs-'));
const isRoot = process.getuid?.() === 0;
const noStack = (s: string) => assert.doesNotMatch(s, /\n\s+at .+:\d+:\d+|internal error|Unhandled/, 'no stack trace');

/** A character device like /dev/null (1,3) or /dev/full (1,7), made in a temp dir: the real ones are never touched. */
function charDevice(dir: string, name: string, minor: number): string | undefined {
  const p = join(dir, name);
  const r = spawnSync('mknod', [p, 'c', '1', String(minor)]);
  return r.status === 0 ? p : undefined;
}

function fifo(dir: string, name: string): string {
  const p = join(dir, name);
  const r = spawnSync('mkfifo', [p]);
  assert.equal(r.status, 0, `mkfifo: ${r.stderr}`);
  return p;
}

/** Every kind of non-regular target this machine lets the test make. */
function hostileTargets(dir: string): { what: string; path: string; kind: (p: string) => boolean }[] {
  const out: { what: string; path: string; kind: (p: string) => boolean }[] = [];
  const isChar = (p: string) => lstatSync(p).isCharacterDevice();
  const dnull = charDevice(dir, 'null-like', 3);
  const dfull = charDevice(dir, 'full-like', 7);
  if (dnull) out.push({ what: 'a /dev/null-like char device', path: dnull, kind: isChar });
  if (dfull) out.push({ what: 'a /dev/full-like char device', path: dfull, kind: isChar });
  if (isRoot) assert.ok(dnull && dfull, 'as root, mknod must work');
  out.push({ what: 'a FIFO', path: fifo(dir, 'fifo'), kind: (p) => lstatSync(p).isFIFO() });
  const sub = join(dir, 'subdir');
  mkdirSync(sub);
  out.push({ what: 'a directory', path: sub, kind: (p) => lstatSync(p).isDirectory() });
  const target = join(dir, 'target.txt');
  writeFileSync(target, 'keep\n');
  const link = join(dir, 'link.html');
  symlinkSync(target, link);
  out.push({ what: 'a symlink to a file', path: link, kind: (p) => lstatSync(p).isSymbolicLink() && readFileSync(target, 'utf8') === 'keep\n' });
  if (isRoot) {
    const theirs = join(dir, 'theirs.html');
    writeFileSync(theirs, 'theirs\n');
    chownSync(theirs, 65534, 65534);
    out.push({ what: "another user's regular file", path: theirs, kind: (p) => lstatSync(p).uid === 65534 && readFileSync(p, 'utf8') === 'theirs\n' });
  }
  return out;
}

test('writeFileAtomic refuses what is not a regular file of the caller\'s, and leaves it as it was', () => {
  const dir = fresh();
  for (const t of hostileTargets(dir)) {
    assert.throws(() => writeFileAtomic(t.path, 'x'), (e: unknown) => e instanceof UnsafeFileError && /berth replaces only a regular file of yours/.test(e.message), t.what);
    assert.throws(() => removeReplaceable(t.path), UnsafeFileError, t.what);
    assert.ok(t.kind(t.path), `${t.what} is unchanged`);
  }
  checkReplaceable(join(dir, 'missing')); // nothing there: fine
  removeReplaceable(join(dir, 'missing'));
});

test('writeFileAtomic replaces a regular file of ours by a rename: a new inode, the whole new text', () => {
  const dir = fresh();
  const p = join(dir, 'r.html');
  writeFileSync(p, 'old');
  const before = lstatSync(p).ino;
  writeFileAtomic(p, 'new text', 0o644);
  assert.equal(readFileSync(p, 'utf8'), 'new text');
  assert.notEqual(lstatSync(p).ino, before, 'replaced by rename, not rewritten in place');
});

for (const cmd of ['inspect', 'doctor'] as const) {
  test(`${cmd} --html refuses a device, a FIFO, a directory, a symlink and another user's file (74), leaving each as it was`, async () => {
    const dir = fresh();
    const env = { BERTH_STATE_DIR: tempStateDir() };
    for (const t of hostileTargets(dir)) {
      const r = await berth([cmd, '--html', t.path], { env });
      assert.equal(r.code, 74, `${t.what}: ${r.stderr}`);
      assert.match(r.stderr, /cannot write the HTML report to .*(not a regular file|not yours)/, t.what);
      assert.doesNotMatch(r.stderr, /wrote /, t.what);
      noStack(r.stderr);
      assert.ok(t.kind(t.path), `${t.what} is unchanged`);
    }
    const ok = join(dir, 'report.html');
    writeFileSync(ok, 'old');
    const r = await berth([cmd, '--html', ok], { env });
    assert.ok(r.code === 0 || (cmd === 'doctor' && r.code === 1), r.stderr);
    assert.match(readFileSync(ok, 'utf8'), /<html/i);
  });
}

test('run --ready-file on a device or a FIFO is refused (74) before anything starts, and left as it was', async () => {
  const dir = fresh();
  const env = { BERTH_STATE_DIR: tempStateDir() };
  for (const t of hostileTargets(dir)) {
    const r = await berth(['run', '--name', 'rf', '--diag-dir', join(fresh(), 'diag'), '--ready-file', t.path, '--', 'sleep', '30'], { env });
    assert.equal(r.code, 74, `${t.what}: ${r.stderr}`);
    assert.match(r.stderr, /ready file/, t.what);
    noStack(r.stderr);
    assert.ok(t.kind(t.path), `${t.what} is unchanged`);
  }
});

/** Runs berth with stdout a pipe whose reader has gone before berth writes (`| head -c0`). */
function withClosedStdout(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BERTH, ...args], { env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // our end of the pipe closes now: berth's first write gets EPIPE
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

test('a closed output (EPIPE) ends the output of every report command, never with a stack trace', async () => {
  const state = tempStateDir();
  // Many leases make `leases --json` large, as in the report (≈300 leases).
  const held = await berth(['port', '--count', '300', '--ttl', '5m', '--name', 'many', '--format', 'json'], { env: { BERTH_STATE_DIR: state } });
  assert.equal(held.code, 0, held.stderr);
  for (const args of [['leases', '--json'], ['leases'], ['inspect'], ['inspect', '--json'], ['doctor', '--json'], ['doctor'], ['--help'], ['port', '--help']]) {
    const r = await withClosedStdout(args, { BERTH_STATE_DIR: state });
    noStack(r.stderr);
    assert.doesNotMatch(r.stderr, /EPIPE/, args.join(' '));
    assert.ok(r.code === 0 || (args[0] === 'doctor' && r.code === 1), `${args.join(' ')}: exit ${r.code}\n${r.stderr}`);
  }
});
