/**
 * One lease domain shared by two users of the host (issue 9 §2): root and a throwaway
 * user, inside a network namespace made for the test. In CI this runs (as root) and
 * never skips; elsewhere it skips loudly when not root or without namespaces.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { requireNetns, runInNetns, tsNode } from './helpers/netns.js';

const USER = 'berthtest2';
const berth = join(import.meta.dirname, '..', 'dist', 'berth.cjs');
const work = mkdtempSync('/tmp/berth-two-users-');
chmodSync(work, 0o755); // the other user must reach the lease root inside
after(() => rmSync(work, { recursive: true, force: true }));

/** uid and gid of the throwaway user, creating it when absent (it is left in place either way). */
function throwawayUser(): { uid: number; gid: number } {
  let id = spawnSync('id', ['-u', USER], { encoding: 'utf8' });
  if (id.status !== 0) {
    const made = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', USER], { encoding: 'utf8' });
    assert.equal(made.status, 0, `useradd ${USER}: ${made.stderr}`);
    id = spawnSync('id', ['-u', USER], { encoding: 'utf8' });
  }
  const gid = spawnSync('id', ['-g', USER], { encoding: 'utf8' });
  return { uid: Number(id.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

interface Ran {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  ms: number;
}

test('two users share one lease domain; neither can remove, redirect or hang the other’s berth', async (t) => {
  if (process.getuid?.() !== 0) {
    if (process.env.CI) throw new Error('the two-user lease test must run as root in CI');
    process.stderr.write(`\n!!! SKIPPING "${t.name}": needs root (to create ${USER} and run berth as it). In CI this is a failure.\n\n`);
    t.skip('needs root');
    return;
  }
  if (!requireNetns(t)) return;
  const { uid, gid } = throwawayUser();
  const root = join(work, 'leases');
  const script = join(import.meta.dirname, 'fixtures', 'scripts', 'leases-two-users.ts');
  const r = await runInNetns({}, tsNode(script, String(uid), String(gid), root, berth), { timeoutMs: 180_000 });
  assert.equal(r.code, 0, `driver failed: ${r.stderr}`);
  const o = JSON.parse(r.stdout) as Record<string, Ran> & { victimDirAfter: string[]; victimAfter: string; victimIsFile: boolean; leftovers: string[]; subMode: string; leaseModes: string[]; rootLeaseAfterUserRelease: boolean; rootLeaseAfterUserRm: boolean };

  // A namespace directory planted as a symlink by the other user is refused (74), not followed.
  assert.equal(o.plantNsLink.code, 0, o.plantNsLink.stderr);
  assert.equal(o.rootOnNsLink.code, 74, o.rootOnNsLink.stderr);
  assert.match(o.rootOnNsLink.stderr, /is a symbolic link/);
  assert.deepEqual(o.victimDirAfter, []);

  // One port, two users: the second is refused, both ways, naming the first.
  assert.equal(o.rootFirst.code, 0, o.rootFirst.stderr);
  assert.equal(o.userSecond.code, 69, o.userSecond.stderr);
  assert.match(o.userSecond.stderr, /24700 leased to no owner pid \(expiry only\) of root, uid 0 "root-svc"/);
  assert.equal(o.userFirst.code, 0, o.userFirst.stderr);
  assert.equal(o.rootSecond.code, 69, o.rootSecond.stderr);
  assert.match(o.rootSecond.stderr, new RegExp(`24701 leased to .* of ${USER}, uid ${uid} "user-svc"`));
  assert.equal(o.subMode, '1777');
  assert.ok(o.leaseModes.length >= 2 && o.leaseModes.every((m) => m === '644'), `lease modes ${o.leaseModes}`);

  // The other user cannot remove root's lease, by berth or by hand.
  assert.equal(o.userRelease.code, 0);
  assert.match(o.userRelease.stderr, /port 24700: the lease is root \(uid 0\)'s; only that user or root can release it/);
  assert.ok(o.rootLeaseAfterUserRelease);
  assert.match(o.userReleaseAll.stdout, /released 24701/, 'release --all ends only one’s own leases');
  assert.ok(o.rootLeaseAfterUserRm, `the sticky bit keeps root's lease: ${o.userRmRoot.stdout}`);

  // A stale lease of root blocks the other user, who is told why; root reclaims it.
  assert.equal(o.rootShort.code, 0);
  assert.equal(o.userOnStale.code, 69, o.userOnStale.stderr);
  assert.match(o.userOnStale.stderr, /24702 has a stale lease of root, uid 0 that only that user or root may remove/);
  assert.match(o.userLeasesOnStale.stderr, /port 24702: a stale \(expired\) lease of root \(uid 0\) blocks the port; only that user or root can remove it/);
  assert.equal(o.rootOnStale.code, 0, o.rootOnStale.stderr);

  // Planted symlinks, FIFOs and directories: never followed, never a hang, nothing written elsewhere.
  assert.equal(o.plant.code, 0, o.plant.stderr);
  for (const k of ['rootOnSymlink', 'rootOnFifo', 'rootOnDir', 'userOnItsSymlink', 'userOnOwnFifo', 'rootLeasesWithPlants']) {
    assert.equal(o[k]!.code, 0, `${k}: ${o[k]!.stderr}`);
    assert.ok(o[k]!.ms < 15_000, `${k} took ${o[k]!.ms} ms`);
  }
  assert.equal(o.victimAfter, 'precious\n');
  assert.ok(o.victimIsFile);
  assert.deepEqual(o.leftovers, [], 'no .reclaim-* or temp files or directories left behind');

  // Both users see both users' leases.
  for (const k of ['rootLeases', 'userLeases']) {
    assert.equal(o[k]!.code, 0, o[k]!.stderr);
    assert.match(o[k]!.stdout, /^PORT +STATE +USER +OWNER +NAME/);
    assert.match(o[k]!.stdout, /24700 +live +root .*root-svc/);
    assert.match(o[k]!.stdout, new RegExp(`24713 +live +${USER}`));
  }
  const listed = JSON.parse(o.userLeasesJson.stdout) as { port: number; uid: number; user?: string }[];
  assert.deepEqual(listed.find((l) => l.port === 24700) && { uid: 0, user: 'root' }, { uid: listed.find((l) => l.port === 24700)!.uid, user: listed.find((l) => l.port === 24700)!.user });
  assert.equal(listed.find((l) => l.port === 24713)?.uid, uid);
});
