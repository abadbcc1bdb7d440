/**
 * Issue 9 §4, files berth writes: a --diag-dir is private like a --run-dir, nothing is
 * written through a planted symlink, a used --diag-dir is refused (runs never mix), shared
 * directories are never "fixed" with chmod, and a file-system failure on a path is exit 74
 * with the path, never a stack trace.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BerthError, EXIT } from '../src/errors.js';
import { createRunDir } from '../src/launch/launch-run-dir.js';
import { checkPrivateDir, makePrivateDir, type PrivateDirWords } from '../src/util/private-dir.js';
import { createNewFile, openForAppend, UnsafeFileError } from '../src/util/safe-file.js';
import { systemErrorAsBerth } from '../src/util/system-error.js';
import { closeSync } from 'node:fs';
import { berth, tempStateDir } from './helpers/cli.js';

const noStack = (s: string) => assert.doesNotMatch(s, /\n\s+at .+:\d+:\d+|internal error/, 'a user error must not print a stack trace');
const fresh = () => mkdtempSync(join(tmpdir(), 'berth-files-'));
const isRoot = process.getuid?.() === 0;

/** A world-writable sticky directory like /tmp, as `mkdir -m1777 /tmp/pub` makes it. */
function publicDir(): string {
  const d = join(fresh(), 'pub');
  mkdirSync(d);
  chmodSync(d, 0o1777);
  return d;
}

const WORDS: PrivateDirWords = {
  name: 'test directory',
  linkRisk: 'x',
  writeRisk: 'y',
  todo: { unreadable: 'u', symlink: 's', notDir: 'n', owner: 'o', create: 'c' },
};

test('--diag-dir in a world-writable directory is refused (74): another user\'s stdout.log symlink cannot redirect the log', async () => {
  const pub = publicDir();
  const victim = join(fresh(), 'victim');
  writeFileSync(victim, 'secret\n', { mode: 0o600 });
  symlinkSync(victim, join(pub, 'stdout.log'));
  const r = await berth(['run', '--diag-dir', pub, '--', 'sh', '-c', 'echo overwritten; exit 3'], { env: { BERTH_STATE_DIR: tempStateDir() } });
  assert.equal(r.code, EXIT.IOERR, r.stderr);
  assert.match(r.stderr, /--diag-dir .*pub is writable by group or others \(mode 1777\).*shared directory: do not change its mode; give --diag-dir .*pub\/berth-\d+/);
  assert.doesNotMatch(r.stderr, /chmod/);
  assert.equal(readFileSync(victim, 'utf8'), 'secret\n');
  noStack(r.stderr);
});

test('a private --diag-dir that already holds a stdout.log (a planted symlink or an old run) is refused (64), nothing written through it', async () => {
  const dir = join(fresh(), 'diag');
  mkdirSync(dir, { mode: 0o700 });
  const victim = join(fresh(), 'victim');
  writeFileSync(victim, 'secret\n', { mode: 0o600 });
  symlinkSync(victim, join(dir, 'stdout.log'));
  const r = await berth(['run', '--diag-dir', dir, '--', 'sh', '-c', 'echo overwritten; exit 3'], { env: { BERTH_STATE_DIR: tempStateDir() } });
  assert.equal(r.code, EXIT.USAGE, r.stderr);
  assert.match(r.stderr, /already holds a run \(stdout\.log\); give a new --diag-dir/);
  assert.equal(readFileSync(victim, 'utf8'), 'secret\n');
});

test('a reused --diag-dir is refused (64); the first run\'s bundle and logs stay as they were', async () => {
  const dir = join(fresh(), 'diag');
  const env = { BERTH_STATE_DIR: tempStateDir() };
  const first = await berth(['run', '--diag-dir', dir, '--', 'sh', '-c', 'echo run-one; exit 3'], { env });
  assert.equal(first.code, EXIT.SOFTWARE, first.stderr);
  const bundle = readFileSync(join(dir, 'diagnostics.json'), 'utf8');
  assert.equal(readFileSync(join(dir, 'stdout.log'), 'utf8'), 'run-one\n');
  assert.equal((lstatSync(dir).mode & 0o777), 0o700);
  const second = await berth(['run', '--diag-dir', dir, '--', 'sh', '-c', 'echo run-two; exit 4'], { env });
  assert.equal(second.code, EXIT.USAGE, second.stderr);
  assert.match(second.stderr, /already holds a run \(diagnostics\.json, stderr\.log, stdout\.log\)/);
  assert.equal(readFileSync(join(dir, 'diagnostics.json'), 'utf8'), bundle);
  assert.equal(readFileSync(join(dir, 'stdout.log'), 'utf8'), 'run-one\n');
});

test('createRunDir: a --diag-dir that is a symlink, someone else\'s or shared is refused before any file is made', { skip: !isRoot && 'needs root to chown' }, () => {
  const base = fresh();
  const real = join(base, 'real');
  mkdirSync(real, { mode: 0o700 });
  symlinkSync(real, join(base, 'link'));
  assert.throws(() => createRunDir({ name: 'x', diagDir: join(base, 'link') }), (e: BerthError) => e.exitCode === EXIT.IOERR && /is a symbolic link/.test(e.message));
  const theirs = join(base, 'theirs');
  mkdirSync(theirs, { mode: 0o700 });
  chownSync(theirs, 65534, 65534);
  assert.throws(() => createRunDir({ name: 'x', diagDir: theirs }), (e: BerthError) => e.exitCode === EXIT.IOERR && /is owned by uid 65534/.test(e.message));
  assert.equal(existsSync(join(real, 'stdout.log')), false);
});

test('files berth creates: O_EXCL never follows a planted link; appends refuse links, FIFOs, others\' files and hard links', { skip: !isRoot && 'needs root to chown' }, () => {
  const dir = fresh();
  const victim = join(dir, 'victim');
  writeFileSync(victim, 'secret\n', { mode: 0o600 });
  symlinkSync(victim, join(dir, 'new.log'));
  assert.throws(() => createNewFile(join(dir, 'new.log')), (e: Error) => e instanceof UnsafeFileError);
  symlinkSync(victim, join(dir, 'append.log'));
  assert.throws(() => openForAppend(join(dir, 'append.log')), (e: Error) => e instanceof UnsafeFileError && /symbolic link/.test(e.message));
  assert.equal(spawnSync('mkfifo', [join(dir, 'fifo.log')]).status, 0);
  // Without O_NONBLOCK this open would wait for a reader forever.
  assert.throws(() => openForAppend(join(dir, 'fifo.log')), (e: Error) => e instanceof UnsafeFileError && /FIFO/.test(e.message));
  const theirs = join(dir, 'theirs.log');
  writeFileSync(theirs, '');
  chownSync(theirs, 65534, 65534);
  assert.throws(() => openForAppend(theirs), (e: Error) => /owned by uid 65534/.test(e.message));
  linkSync(victim, join(dir, 'hard.log'));
  assert.throws(() => openForAppend(join(dir, 'hard.log')), (e: Error) => /2 hard links/.test(e.message));
  assert.equal(readFileSync(victim, 'utf8'), 'secret\n');
  closeSync(openForAppend(join(dir, 'plain.log')));
  closeSync(createNewFile(join(dir, 'fresh.log')));
});

test('shared directories are never to be chmod-ed: sticky or world-writable get "a private subdirectory" advice', () => {
  const pub = publicDir();
  assert.throws(() => checkPrivateDir(pub, WORDS), (e: BerthError) => {
    assert.equal(e.exitCode, EXIT.IOERR);
    assert.match(e.message, /it is a shared directory: do not change its mode; use a private subdirectory such as .*pub\/berth-\d+ \(berth creates it 0700\)/);
    assert.doesNotMatch(e.message, /chmod/);
    return true;
  });
  const own = join(fresh(), 'own');
  mkdirSync(own);
  chmodSync(own, 0o770);
  assert.throws(() => checkPrivateDir(own, WORDS), (e: BerthError) => /use a private subdirectory such as .*, or, if no one else needs .*own: chmod 700 /.test(e.message));
});

test('BERTH_STATE_DIR=/tmp-like and up --run-dir /tmp-like: no "chmod" advice, a private subdirectory instead', async () => {
  const pub = publicDir();
  // BERTH_STATE_DIR is the base of run folders (never of leases: berth port does not use it).
  const port = await berth(['run', '--range', '20000-20010', '--', 'true'], { env: { BERTH_STATE_DIR: pub } });
  assert.equal(port.code, EXIT.IOERR, port.stderr);
  assert.doesNotMatch(port.stderr, /chmod/);
  assert.match(port.stderr, /do not change its mode/);
  const stack = join(fresh(), 's.yaml');
  writeFileSync(stack, 'services:\n  a:\n    command: ["true"]\n    port: none\n    job: true\n');
  const up = await berth(['up', stack, '--run-dir', pub], { env: { BERTH_STATE_DIR: tempStateDir() } });
  assert.equal(up.code, EXIT.IOERR, up.stderr);
  assert.doesNotMatch(up.stderr, /chmod/);
  assert.match(up.stderr, /give --run-dir .*pub\/berth-\d+/);
});

test('an XDG_RUNTIME_DIR another user cannot search (as after su): run exits 74 naming it, leases lists; no stack trace', { skip: !isRoot && 'needs root to switch user' }, async (t) => {
  if (spawnSync('setpriv', ['--help']).status !== 0) return t.skip('needs setpriv');
  const xdg = join(fresh(), 'xdg');
  mkdirSync(xdg, { mode: 0o700 }); // root's, like /run/user/0 after `su user`
  chmodSync(join(xdg, '..'), 0o755);
  const asNobody = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', 'env', `XDG_RUNTIME_DIR=${xdg}`, 'BERTH_STATE_DIR=', process.execPath, join(process.cwd(), 'dist/berth.cjs')];
  const as = (args: string[]) => spawnSync(asNobody[0]!, [...asNobody.slice(1), ...args], { encoding: 'utf8', cwd: '/', timeout: 30_000 });
  // run keeps its logs under XDG_RUNTIME_DIR/berth: refused before anything is leased.
  const r = as(['run', '--', 'true']);
  assert.equal(r.status, EXIT.IOERR, r.stderr);
  assert.ok(r.stderr.includes(xdg), r.stderr);
  assert.match(r.stderr, /XDG_RUNTIME_DIR.*unset it/);
  noStack(r.stderr);
  // leases live in the shared per-namespace directory; listing them must not trip over XDG.
  const l = as(['leases']);
  assert.ok(l.status === 0 || l.status === EXIT.IOERR, l.stderr);
  noStack(l.stderr);
});

test('systemErrorAsBerth: a failed file-system call on a path is 74 with the path and a hint; other errors are left alone', () => {
  const e = Object.assign(new Error("EACCES: permission denied, lstat '/run/user/0/berth'"), { code: 'EACCES', syscall: 'lstat', path: '/run/user/0/berth' });
  const b = systemErrorAsBerth(e, { XDG_RUNTIME_DIR: '/run/user/0' });
  assert.equal(b?.exitCode, EXIT.IOERR);
  assert.match(b!.message, /^cannot examine \/run\/user\/0\/berth: permission denied \(EACCES\); XDG_RUNTIME_DIR=\/run\/user\/0 belongs to another user/);
  assert.equal(systemErrorAsBerth(new TypeError('x is undefined')), undefined);
  assert.equal(systemErrorAsBerth(Object.assign(new Error('spawn E2BIG'), { code: 'E2BIG', syscall: 'spawn /bin/true', path: '/bin/true' })), undefined);
});

test('makePrivateDir: where mkdir says ENOENT under an existing parent (/proc) it fails with 74 instead of spinning', () => {
  const t0 = Date.now();
  assert.throws(() => makePrivateDir('/proc/berth-test/x', true, WORDS), (e: BerthError) => e.exitCode === EXIT.IOERR && /cannot be created \(ENOENT\)/.test(e.message));
  assert.ok(Date.now() - t0 < 5_000);
  const d = join(fresh(), 'a', 'b', 'c');
  assert.equal(makePrivateDir(d, true, WORDS), true);
  assert.equal(lstatSync(d).mode & 0o777, 0o700);
  assert.equal(lstatSync(join(d, '..')).mode & 0o777, 0o700);
});
