import { lstatSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { checkPrivateDir as checkDir, makePrivateDir, type PrivateDirWords } from '../util/private-dir.js';
import { openSharedDir, type PinnedDir } from '../util/shared-dir.js';

/*
 * Where leases live. By default one directory per host network namespace shared by every
 * user (/tmp/berth/net-<id>, mode 1777 like /tmp): two users' jobs must never get the same
 * port. Each user can create leases there but remove only their own (the sticky bit);
 * lease-store.ts never follows anything it finds there.
 *
 * BERTH_STATE_DIR (or a caller's stateDir) instead gives a private lease domain of one
 * user, created 0700 and re-checked on every use: for tests, which must not see the host's
 * leases. It also holds berth's private run directories (launch/run-dir.ts).
 */

/** The shared lease root when nothing else is said. */
export const DEFAULT_LEASE_ROOT = '/tmp/berth';

/** Where leases live and whether the directory is shared by all users or private to one. */
export interface LeaseLocation {
  root: string;
  shared: boolean;
}

/**
 * $BERTH_LEASE_DIR (shared; for sites whose /tmp is private per job, e.g. Slurm
 * job_container/tmpfs), else $BERTH_STATE_DIR (private, one user's domain), else /tmp/berth (shared).
 */
export function resolveLeaseLocation(env: NodeJS.ProcessEnv = process.env): LeaseLocation {
  const shared = env.BERTH_LEASE_DIR;
  if (shared !== undefined && shared !== '') return { root: shared, shared: true };
  const priv = env.BERTH_STATE_DIR;
  if (priv !== undefined && priv !== '') return { root: priv, shared: false };
  return { root: DEFAULT_LEASE_ROOT, shared: true };
}

/** Base directory for berth's private state (run directories): $BERTH_STATE_DIR, else $XDG_RUNTIME_DIR/berth, else /tmp/berth-<uid>. */
export function resolveStateDir(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env.BERTH_STATE_DIR;
  if (explicit !== undefined && explicit !== '') return explicit;
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime !== undefined && runtime !== '') return join(runtime, 'berth');
  return `/tmp/berth-${currentUid()}`;
}

function currentUid(): number {
  // process.getuid is absent only on Windows, which berth does not support.
  return process.getuid?.() ?? 0;
}

/** "net:[4026531833]" -> "net-4026531833": ports (and so leases) are per network namespace. */
export function netnsDirName(netns: string): string {
  const m = /^net:\[(\d+)\]$/.exec(netns);
  if (m) return `net-${m[1]}`;
  // Fixture trees or odd kernels: keep it a single safe path component.
  const safe = netns.replace(/[^A-Za-z0-9_-]+/g, '_');
  return `net-${safe === '' ? 'unknown' : safe}`;
}

/** The messages of src/util/private-dir.ts, in the lease directory's words. */
function words(path: string): PrivateDirWords {
  return {
    name: 'lease directory',
    linkRisk: 'someone could redirect leases',
    writeRisk: 'forge or remove leases',
    todo: {
      unreadable: 'check the path and its parents, or set BERTH_STATE_DIR to a private directory',
      symlink: `remove it (rm ${path}) or set BERTH_STATE_DIR to a private directory`,
      notDir: 'remove it or set BERTH_STATE_DIR to a private directory',
      owner: 'set BERTH_STATE_DIR to a directory you own (mode 0700)',
      create: 'check permissions of its parent, or set BERTH_STATE_DIR to a writable private directory',
    },
  };
}

/** Throws BerthError(74) unless `path` is a real directory owned by us and not writable by others. */
export function checkPrivateDir(path: string): Stats {
  return checkDir(path, words(path));
}

/**
 * Create (0700) and check the base directory and its per-namespace subdirectory; returns
 * the subdirectory, where lease files live. Throws BerthError(EXIT.IOERR) when unsafe.
 */
export function openStateDir(dir: string, netns: string): string {
  ensureDir(dir, true);
  checkPrivateDir(dir);
  const sub = join(dir, netnsDirName(netns));
  ensureDir(sub, false);
  checkPrivateDir(sub);
  return sub;
}

/**
 * mkdir only when nothing is there: this runs on every allocation, and mkdir of an
 * existing directory costs a thrown EEXIST (and, recursive, a stat). Whatever is there is
 * judged by checkPrivateDir right after, as before; a directory made meanwhile by another
 * process is fine (makePrivateDir ignores EEXIST).
 */
function ensureDir(path: string, recursive: boolean): void {
  if (lstatSync(path, { throwIfNoEntry: false }) === undefined) makePrivateDir(path, recursive, words(path));
}

/** An opened lease directory. */
export interface LeaseDir {
  /** The path users know (messages, Lease.path). */
  path: string;
  /** The path to operate on: a /proc/self/fd path for a shared directory (see util/shared-dir.ts). */
  at: string;
  shared: boolean;
  /** Who owns the shared root and namespace directory, when that is another non-root user. */
  foreignOwners: { path: string; uid: number }[];
}

function sharedWords(root: string, isDefault: boolean) {
  return {
    name: 'shared lease directory',
    fix: isDefault
      ? `ask root to run: chown root:root ${root} && chmod 1777 ${root} (or make it at boot: 'd ${root} 1777 root root -' in /etc/tmpfiles.d/berth.conf)`
      : `BERTH_LEASE_DIR must name a directory made for berth's leases and shared by all users: as root, install -d -m 1777 -o root -g root DIR, then set BERTH_LEASE_DIR=DIR`,
  };
}

/**
 * Open the lease directory of `netns` at `loc`: shared (mode 1777, pinned) or private
 * (0700, checked). Throws BerthError(EXIT.IOERR) when it is unsafe or cannot be made.
 */
export function openLeaseDir(loc: LeaseLocation, netns: string): LeaseDir {
  if (!loc.shared) {
    const p = openStateDir(loc.root, netns);
    return { path: p, at: p, shared: false, foreignOwners: [] };
  }
  const words = sharedWords(loc.root, loc.root === DEFAULT_LEASE_ROOT);
  const root: PinnedDir = openSharedDir(loc.root, loc.root, words);
  const name = netnsDirName(netns);
  const sub = openSharedDir(join(root.at, name), join(loc.root, name), {
    name: 'shared lease directory',
    fix: `ask root to remove it (rm -r ${join(loc.root, name)}; berth makes it again), or set BERTH_LEASE_DIR to another shared directory`,
  });
  const foreignOwners: LeaseDir['foreignOwners'] = [];
  for (const d of [root, sub]) if (d.foreignOwner !== undefined) foreignOwners.push({ path: d.path, uid: d.foreignOwner });
  return { path: sub.path, at: sub.at, shared: true, foreignOwners };
}
