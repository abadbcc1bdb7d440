/**
 * The lease directory and lease files, with real files and real processes (no sockets:
 * reserve() end to end is in allocate-netns.test.ts and allocate-race.test.ts).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { newLeaseRecord, parseLeaseRecord } from '../src/allocate/lease-record.js';
import {
  acquireLease,
  cleanLeftovers,
  commitLeases,
  createLeaseFile,
  judgeLease,
  leasePath,
  leaseStillOurs,
  listLeases,
  readLeaseFile,
  releaseLeasesIn,
  removeOwnLease,
  takeAway,
} from '../src/allocate/lease-store.js';
import { releaseLeases } from '../src/allocate/leases.js';
import { reserve } from '../src/allocate/reserve.js';
import { netnsDirName, openLeaseDir, openStateDir, resolveLeaseLocation, resolveStateDir } from '../src/allocate/state-dir.js';
import { BerthError } from '../src/errors.js';
import { processStartTime } from '../src/host/proc-stat.js';
import { readNetns } from '../src/host/read-host.js';
import type { LeaseRecord } from '../src/allocate/types.js';

let work: string;
let sleeper: ChildProcess;
let livePid: number;
let liveStart: number;
let deadPid: number;
let n = 0;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'berth-leases-'));
  sleeper = spawn('sleep', ['120'], { stdio: 'ignore' });
  livePid = sleeper.pid!;
  for (let i = 0; i < 100 && processStartTime(livePid) === undefined; i++) await sleep(5);
  liveStart = processStartTime(livePid)!;
  deadPid = spawnSync('true').pid!;
});

after(() => {
  sleeper.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

/** A fresh lease directory. */
function dir(): string {
  return openStateDir(join(work, `s${n++}`), 'net:[4026531833]');
}

const now = Date.now();
const owned = (port: number, pid = livePid, start = liveStart): LeaseRecord =>
  newLeaseRecord({ port, netns: 'net:[1]', owner: { pid, start }, now, createdBy: process.pid, env: {} });
const timed = (port: number, expiresAt: number): LeaseRecord => newLeaseRecord({ port, netns: 'net:[1]', expiresAt, now, createdBy: process.pid, env: {} });

function expectIoError(f: () => unknown, re: RegExp): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(e instanceof BerthError);
    assert.equal(e.exitCode, 74);
    assert.match(e.message, re);
    return true;
  });
}

describe('state directory', () => {
  test('resolveStateDir: BERTH_STATE_DIR, then XDG_RUNTIME_DIR/berth, then /tmp/berth-<uid>', () => {
    assert.equal(resolveStateDir({ BERTH_STATE_DIR: '/x/y', XDG_RUNTIME_DIR: '/run/user/1' }), '/x/y');
    assert.equal(resolveStateDir({ XDG_RUNTIME_DIR: '/run/user/1' }), '/run/user/1/berth');
    assert.equal(resolveStateDir({ XDG_RUNTIME_DIR: '' }), `/tmp/berth-${process.getuid!()}`);
    assert.equal(resolveStateDir({}), `/tmp/berth-${process.getuid!()}`);
  });

  test('creates private directories, one per network namespace', () => {
    const base = join(work, 'fresh', 'deeper', 'berth');
    const sub = openStateDir(base, 'net:[4026531833]');
    assert.equal(sub, join(base, 'net-4026531833'));
    assert.equal(lstatSync(base).mode & 0o777, 0o700);
    assert.equal(lstatSync(sub).mode & 0o777, 0o700);
    assert.equal(openStateDir(base, 'net:[4026531833]'), sub, 'reopening is fine');
    assert.equal(netnsDirName('../../etc'), 'net-_etc');
    assert.equal(netnsDirName('net:[4026532177]'), 'net-4026532177');
  });

  test('refuses a symlink, a file, a group/world-writable or foreign directory (exit 74)', () => {
    const real = join(work, 'real');
    mkdirSync(real, { mode: 0o700 });
    const link = join(work, 'link');
    symlinkSync(real, link);
    expectIoError(() => openStateDir(link, 'net:[1]'), new RegExp(`lease directory ${link} is a symbolic link.*rm ${link}`));

    const file = join(work, 'file');
    writeFileSync(file, '');
    expectIoError(() => openStateDir(file, 'net:[1]'), /exists but is not a directory|cannot be created/);

    const open = join(work, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    expectIoError(() => openStateDir(open, 'net:[1]'), new RegExp(`${open} is writable by group or others \\(mode 0777\\).*do not change its mode; use a private subdirectory such as ${open}/berth-`));

    // The namespace subdirectory gets the same checks.
    const base = join(work, 'base');
    mkdirSync(base, { mode: 0o700 });
    symlinkSync(real, join(base, 'net-9'));
    expectIoError(() => openStateDir(base, 'net:[9]'), /net-9 is a symbolic link/);

    if (process.getuid!() === 0) {
      const foreign = join(work, 'foreign');
      mkdirSync(foreign, { mode: 0o700 });
      chownSync(foreign, 4321, 4321);
      expectIoError(() => openStateDir(foreign, 'net:[1]'), /is owned by uid 4321, not by you \(uid 0\)/);
    }
  });

  test('reserve refuses a world-writable state directory before touching anything', async () => {
    const open = join(work, 'open-reserve');
    mkdirSync(open);
    chmodSync(open, 0o757);
    await assert.rejects(reserve({ source: { kind: 'port', port: 20000 }, stateDir: open }), (e: unknown) => {
      assert.ok(e instanceof BerthError);
      assert.equal(e.exitCode, 74);
      assert.match(e.message, /writable by group or others \(mode 0757\)/);
      return true;
    });
    assert.deepEqual(readdirSync(open), []);
  });
});

describe('lease files', () => {
  test('create is atomic and exclusive, complete JSON, mode 0644 whatever the umask, no temp file left', () => {
    const d = dir();
    const made = createLeaseFile(d, owned(20000));
    assert.ok(made);
    assert.equal(made.path, leasePath(d, 20000));
    assert.equal(lstatSync(made.path).ino, made.ino);
    // Every user of a shared lease directory must be able to read every lease.
    const umask = process.umask(0o077);
    const other = createLeaseFile(d, owned(20001));
    process.umask(umask);
    assert.equal(lstatSync(made.path).mode & 0o777, 0o644);
    assert.equal(lstatSync(other!.path).mode & 0o777, 0o644);
    unlinkSync(other!.path);
    assert.deepEqual(JSON.parse(readFileSync(made.path, 'utf8')), owned(20000));
    assert.equal(createLeaseFile(d, owned(20000, deadPid, 1)), undefined, 'second create fails');
    assert.deepEqual(readdirSync(d), ['20000.lease']);
  });

  test('a live owner blocks; dead owner, expired, reused pid and garbage are reclaimed', async () => {
    const d = dir();
    assert.ok(createLeaseFile(d, owned(20000)));
    const blocked = await acquireLease(d, owned(20000, process.pid, processStartTime(process.pid)!));
    assert.equal(blocked.ok, false);
    assert.equal(!blocked.ok && blocked.reason, 'leased');
    assert.equal(!blocked.ok && blocked.holder?.pid, livePid);

    const cases: [number, LeaseRecord | string, string][] = [
      [20001, owned(20001, deadPid, 5), 'owner-gone'],
      [20002, timed(20002, Date.now() - 1), 'expired'],
      [20003, owned(20003, livePid, liveStart - 1), 'pid-reused'],
      [20004, '{"port": 20004, "pid": 12', 'garbage'],
      [20005, '', 'garbage'],
    ];
    for (const [port, rec, state] of cases) {
      writeFileSync(leasePath(d, port), typeof rec === 'string' ? rec : JSON.stringify(rec));
      const mine = owned(port, process.pid, processStartTime(process.pid)!);
      const got = await acquireLease(d, mine);
      assert.ok(got.ok, `${port} reclaimed`);
      assert.equal(got.reclaimed, state);
      assert.deepEqual(readLeaseFile(leasePath(d, port))?.record, mine);
    }
    // A future expiry without owner is live.
    assert.ok(createLeaseFile(d, timed(20006, Date.now() + 60_000)));
    assert.equal((await acquireLease(d, owned(20006))).ok, false);
    assert.equal(readdirSync(d).filter((f) => f.startsWith('.')).length, 0, 'no reclaim or temp files left');
  });

  test('a symlink in place of a lease is garbage and is replaced, not followed', async () => {
    const d = dir();
    const target = join(work, 'target');
    writeFileSync(target, 'keep me');
    symlinkSync(target, leasePath(d, 20010));
    const got = await acquireLease(d, owned(20010));
    assert.ok(got.ok);
    assert.equal(got.reclaimed, 'garbage');
    assert.equal(readFileSync(target, 'utf8'), 'keep me');
  });

  test('takeAway puts back a file that turned out not to be removable', async () => {
    const d = dir();
    const made = createLeaseFile(d, owned(20020))!;
    assert.equal(await takeAway(made.path, made.ino, 'reclaim', () => false), 'kept');
    assert.equal(lstatSync(made.path).ino, made.ino, 'same inode back in place');
    assert.equal(await takeAway(made.path, made.ino + 1, 'reclaim', () => true), 'kept', 'another inode is never touched');
    assert.equal(await takeAway(join(d, '20021.lease'), 1, 'reclaim', () => true), 'gone');
    assert.deepEqual(readdirSync(d), ['20020.lease']);
  });

  test('when a third lease appears while one is moved aside, both survive and a warning is loud', async () => {
    const d = dir();
    const made = createLeaseFile(d, owned(20030))!;
    const warnings: string[] = [];
    let third: { ino: number } | undefined;
    const r = await takeAway(
      made.path,
      made.ino,
      'reclaim',
      () => {
        // Simulate a third allocator creating a lease in the window.
        third = createLeaseFile(d, owned(20030, process.pid, processStartTime(process.pid)!));
        return false;
      },
      { warn: (m) => warnings.push(m), putBackMs: 30 },
    );
    assert.equal(r, 'displaced');
    assert.ok(third);
    assert.equal(lstatSync(made.path).ino, third.ino, 'the third lease is not removed');
    const aside = readdirSync(d).filter((f) => f.startsWith('.reclaim-'));
    assert.equal(aside.length, 1, 'the displaced live lease is kept aside');
    assert.equal(lstatSync(join(d, aside[0]!)).ino, made.ino);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /moved aside from .*20030\.lease.*kept at .*\.reclaim-/);
  });

  test('put-back waits for a competing lease to go away', async () => {
    const d = dir();
    const made = createLeaseFile(d, owned(20040))!;
    const r = takeAway(made.path, made.ino, 'reclaim', () => {
      const c = createLeaseFile(d, owned(20040, process.pid, processStartTime(process.pid)!))!;
      // The competitor loses its bind and removes its lease shortly after.
      setTimeout(() => void removeOwnLease(c.path, c), 40);
      return false;
    });
    assert.equal(await r, 'kept');
    assert.equal(lstatSync(made.path).ino, made.ino);
  });

  test('removeOwnLease removes only our lease, even if its inode number was reused; leaseStillOurs waits out a brief absence', async () => {
    const d = dir();
    const a = createLeaseFile(d, owned(20050))!;
    // Someone replaced it (e.g. reclaimed after our expiry): not ours to remove, even
    // though the filesystem may well hand the freed inode number to the new file.
    unlinkSync(a.path);
    const b = createLeaseFile(d, owned(20050, process.pid, processStartTime(process.pid)!))!;
    assert.equal(await removeOwnLease(a.path, a), false);
    assert.equal(lstatSync(b.path).ino, b.ino);
    assert.equal(await leaseStillOurs(b.path, a, 20), false);
    assert.equal(await leaseStillOurs(b.path, b), true);

    const aside = join(d, '.aside');
    renameSync(b.path, aside);
    setTimeout(() => {
      linkSync(aside, b.path);
      unlinkSync(aside);
    }, 30);
    assert.equal(await leaseStillOurs(b.path, b, 1000), true);
    assert.equal(await removeOwnLease(b.path, b), true);
    assert.deepEqual(readdirSync(d), []);
  });

  test('listLeases reports liveness; release removes only targeted leases and cleans stale ones', async () => {
    const d = dir();
    createLeaseFile(d, owned(20060));
    createLeaseFile(d, { ...owned(20061), slurmJobId: '77' });
    createLeaseFile(d, owned(20062, deadPid, 5));
    createLeaseFile(d, timed(20063, Date.now() + 60_000));
    writeFileSync(leasePath(d, 20064), 'junk');
    writeFileSync(join(d, 'notes.txt'), 'not a lease');
    // Leftovers of a process that died mid-create: cleaned once old enough.
    const old = join(d, `.tmp-${deadPid}-abcdef`);
    writeFileSync(old, '{}');
    utimesSync(old, new Date(Date.now() - 120_000), new Date(Date.now() - 120_000));
    const young = join(d, `.tmp-${deadPid}-123456`);
    writeFileSync(young, '{}');

    const listed = listLeases(d);
    assert.deepEqual(listed.map((l) => [l.port, l.live, l.state]), [
      [20060, true, 'live'],
      [20061, true, 'live'],
      [20062, false, 'owner-gone'],
      [20063, true, 'live'],
    ]);

    const r1 = await releaseLeasesIn(d, { jobId: '77' });
    assert.deepEqual(r1.released.map((l) => l.port), [20061]);
    assert.equal(r1.cleaned, 3, 'dead owner, junk file, old temp file');
    assert.deepEqual(readdirSync(d).sort(), [`.tmp-${deadPid}-123456`, '20060.lease', '20063.lease', 'notes.txt']);

    const r2 = await releaseLeasesIn(d, { ports: [20063] });
    assert.deepEqual(r2.released.map((l) => l.port), [20063]);
    const r3 = await releaseLeasesIn(d, { ownerPid: livePid });
    assert.deepEqual(r3.released.map((l) => l.port), [20060]);
    createLeaseFile(d, owned(20070));
    createLeaseFile(d, timed(20071, Date.now() + 60_000));
    assert.deepEqual((await releaseLeasesIn(d, {})).released, [], 'no target: nothing live removed');
    assert.deepEqual((await releaseLeasesIn(d, { all: true })).released.map((l) => l.port), [20070, 20071]);
    assert.deepEqual(readdirSync(d).sort(), [`.tmp-${deadPid}-123456`, 'notes.txt']);
  });

  test('releaseLeases works on the current namespace’s directory', async () => {
    const stateDir = join(work, 'ns-release');
    const d = openStateDir(stateDir, readNetns());
    createLeaseFile(d, owned(20080));
    const r = await releaseLeases({ stateDir, ports: [20080] });
    assert.deepEqual(r.released.map((l) => l.port), [20080]);
  });
});

describe('sets: pending until committed (issue 9 §3)', () => {
  const pendingOf = (port: number, pid: number, pidStart: number, set: string): LeaseRecord => ({
    ...owned(port),
    pending: { pid, pidStart, set },
  });

  test('a pending lease is its allocator’s: blocking while it lives, abandoned once it is gone, committed by a marker of the same user', () => {
    const d = dir();
    const st = (r: LeaseRecord) => judgeLease(d, readLeaseFile(createLeaseFile(d, r)!.path)!, Date.now(), processStartTime);
    assert.equal(st(pendingOf(20200, livePid, liveStart, 'a-1')), 'pending');
    assert.equal(st(pendingOf(20201, deadPid, 5, 'b-1')), 'abandoned');
    writeFileSync(join(d, '.set-c-1'), '');
    assert.equal(st(pendingOf(20202, deadPid, 5, 'c-1')), 'live', 'the marker commits the set: the owner’s now');
    if (process.getuid!() === 0) {
      writeFileSync(join(d, '.set-d-1'), '');
      chownSync(join(d, '.set-d-1'), 4321, 4321);
      assert.equal(st(pendingOf(20203, deadPid, 5, 'd-1')), 'abandoned', 'another user’s marker commits nothing');
    }
    // Abandoned leases are reclaimed like any stale lease.
    const r = listLeases(d).find((l) => l.port === 20201)!;
    assert.equal(r.live, false);
  });

  test('commitLeases rewrites each lease without pending and leaves no marker or temp file', () => {
    const d = dir();
    const a = createLeaseFile(d, pendingOf(20210, process.pid, processStartTime(process.pid)!, 's-1'))!;
    const b = createLeaseFile(d, pendingOf(20211, process.pid, processStartTime(process.pid)!, 's-1'))!;
    const ids = commitLeases(d, 's-1', [
      { file: a.path, id: a, record: owned(20210) },
      { file: b.path, id: b, record: owned(20211) },
    ]);
    assert.equal(ids.length, 2);
    for (const p of [20210, 20211]) {
      const f = readLeaseFile(leasePath(d, p))!;
      assert.equal(f.record?.pending, undefined);
      assert.equal(judgeLease(d, f, Date.now(), processStartTime), 'live');
    }
    assert.deepEqual(readdirSync(d).sort(), ['20210.lease', '20211.lease']);
  });

  test('parseLeaseRecord refuses a malformed pending field (garbage, not a lease of the owner)', () => {
    const base = JSON.stringify(owned(20220)).slice(0, -1);
    assert.equal(parseLeaseRecord(`${base},"pending":{"pid":1,"pidStart":2,"set":"../x"}}`), undefined);
    assert.equal(parseLeaseRecord(`${base},"pending":{"pid":1}}`), undefined);
    assert.ok(parseLeaseRecord(`${base},"pending":{"pid":1,"pidStart":2,"set":"1-2-3"}}`)?.pending);
  });
});

describe('things planted at lease names (issue 9 §2, §5)', () => {
  test('an empty directory is removed in place, a non-empty one is skipped: no .reclaim-* directory is left', async () => {
    const d = dir();
    mkdirSync(join(d, '20300.lease'));
    const got = await acquireLease(d, owned(20300));
    assert.equal(got.ok, true);
    mkdirSync(join(d, '20301.lease'));
    writeFileSync(join(d, '20301.lease', 'x'), '');
    const refused = await acquireLease(d, owned(20301));
    assert.equal(refused.ok, false);
    assert.equal(!refused.ok && refused.reason, 'foreign');
    assert.deepEqual(readdirSync(d).filter((n) => n.startsWith('.')), []);
  });

  test('FIFO, socket and oversized files are garbage, read without hanging and reclaimed', async () => {
    const d = dir();
    assert.equal(spawnSync('mkfifo', [join(d, '20310.lease')]).status, 0);
    writeFileSync(join(d, '20311.lease'), 'x'.repeat(100_000));
    const sock = spawnSync('/usr/bin/python3', ['-c', `import socket; s=socket.socket(socket.AF_UNIX); s.bind(${JSON.stringify(join(d, '20312.lease'))})`]);
    assert.equal(sock.status, 0, String(sock.stderr));
    assert.equal(readLeaseFile(join(d, '20310.lease'))?.odd, 'not-a-file');
    assert.equal(readLeaseFile(join(d, '20311.lease'))?.odd, 'too-large');
    assert.equal(readLeaseFile(join(d, '20312.lease'))?.odd, 'not-a-file');
    for (const p of [20310, 20311, 20312]) assert.equal((await acquireLease(d, owned(p))).ok, true, `port ${p}`);
  });

  test('old .reclaim-* directories of dead processes are removed when empty', () => {
    const d = dir();
    const old = join(d, `.reclaim-${deadPid}-0abc`);
    mkdirSync(old);
    utimesSync(old, new Date(Date.now() - 120_000), new Date(Date.now() - 120_000));
    assert.equal(cleanLeftovers(d), 1);
    assert.deepEqual(readdirSync(d), []);
  });
});

describe('the shared lease directory (issue 9 §2)', () => {
  const loc = (root: string) => ({ root, shared: true });

  test('created mode 1777 (sticky, like /tmp) whatever the umask, one per namespace; reopening is fine', () => {
    const root = join(work, `shared-${n++}`);
    const umask = process.umask(0o077);
    const d = openLeaseDir(loc(root), 'net:[4026531833]');
    process.umask(umask);
    assert.equal(d.path, join(root, 'net-4026531833'));
    assert.ok(d.at.startsWith('/proc/self/fd/'));
    assert.equal(lstatSync(root).mode & 0o7777, 0o1777);
    assert.equal(lstatSync(d.path).mode & 0o7777, 0o1777);
    assert.deepEqual(d.foreignOwners, []);
    assert.equal(openLeaseDir(loc(root), 'net:[4026531833]').at, d.at);
    // Operations through the pinned path land in the real directory; messages name the real one.
    const made = createLeaseFile(d.at, owned(20400))!;
    assert.ok(existsSync(join(d.path, '20400.lease')));
    assert.equal(listLeases(d.at)[0]!.path, join(d.path, '20400.lease'));
    unlinkSync(made.path);
  });

  test('refuses a symlink, a non-sticky or non-world-writable directory (74) and says what root should run', () => {
    const real = join(work, `shared-real-${n++}`);
    mkdirSync(real, { mode: 0o1777 });
    const link = join(work, `shared-link-${n++}`);
    symlinkSync(real, link);
    expectIoError(() => openLeaseDir(loc(link), 'net:[1]'), /is a symbolic link/);
    const open = join(work, `shared-open-${n++}`);
    mkdirSync(open);
    chmodSync(open, 0o777);
    expectIoError(() => openLeaseDir(loc(open), 'net:[1]'), /world-writable but not sticky.*mode 0777.*install -d -m 1777 -o root -g root DIR/);
    const closed = join(work, `shared-closed-${n++}`);
    mkdirSync(closed);
    chmodSync(closed, 0o755);
    expectIoError(() => openLeaseDir(loc(closed), 'net:[1]'), /is not writable by every user \(mode 0755/);
    assert.doesNotMatch(String((() => { try { openLeaseDir(loc(closed), 'net:[1]'); } catch (e) { return (e as Error).message; } })()), /chmod [0-7]+ \/tmp( |$)/);
  });

  test('a directory owned by another non-root user is accepted and reported', (t) => {
    if (process.getuid!() !== 0) return t.skip('needs root to chown');
    const root = join(work, `shared-foreign-${n++}`);
    mkdirSync(root);
    chmodSync(root, 0o1777);
    chownSync(root, 4321, 4321);
    const d = openLeaseDir(loc(root), 'net:[7]');
    assert.deepEqual(d.foreignOwners, [{ path: root, uid: 4321 }]);
  });

  test('resolveLeaseLocation: BERTH_LEASE_DIR (shared), then BERTH_STATE_DIR (private), then /tmp/berth (shared)', () => {
    assert.deepEqual(resolveLeaseLocation({ BERTH_LEASE_DIR: '/l', BERTH_STATE_DIR: '/s' }), { root: '/l', shared: true });
    assert.deepEqual(resolveLeaseLocation({ BERTH_STATE_DIR: '/s' }), { root: '/s', shared: false });
    assert.deepEqual(resolveLeaseLocation({ XDG_RUNTIME_DIR: '/run/user/1' }), { root: '/tmp/berth', shared: true });
  });
});
