/**
 * Throwaway system users for tests that need real other users (the privilege tests of the
 * lease domain). Created with useradd when absent and left in place (no home, no shell).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

export interface TestUser {
  name: string;
  uid: number;
  gid: number;
}

export function throwawayUser(name: string): TestUser {
  let id = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  if (id.status !== 0) {
    // Two copies of the suite at once: useradd fails (exit 1, "cannot lock /etc/passwd") while
    // another holds that lock, so the suites take turns on a lock of theirs; one may have made
    // the user meanwhile (exit 9: already exists).
    const made = spawnSync('flock', ['/tmp/berth-test-useradd.lock', 'useradd', '--system', '--no-create-home', '--shell', '/usr/sbin/nologin', name], { encoding: 'utf8' });
    assert.ok(made.status === 0 || made.status === 9, `useradd ${name}: ${made.stderr}`);
    id = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  }
  const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  return { name, uid: Number(id.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** argv prefix that runs a command as `u` (real and effective ids, no supplementary groups). */
export function asUser(u: Pick<TestUser, 'uid' | 'gid'>): string[] {
  return ['setpriv', `--reuid=${u.uid}`, `--regid=${u.gid}`, '--clear-groups', '--'];
}
