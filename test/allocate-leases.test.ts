/**
 * The lease directory and lease files, with real files and real processes (no sockets:
 * reserve() end to end is in allocate-netns.test.ts and allocate-race.test.ts).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
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
import { newLeaseRecord } from '../src/allocate/lease-record.js';
import {
  acquireLease,
  createLeaseFile,
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
import { netnsDirName, openStateDir, resolveStateDir } from '../src/allocate/state-dir.js';
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
