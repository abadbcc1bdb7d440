import { lstatSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { checkPrivateDir as checkDir, makePrivateDir, type PrivateDirWords } from '../util/private-dir.js';

/*
 * The lease directory is the only shared state between allocators, so anyone who can
 * write into it (or redirect it with a symlink) can steal or forge leases. It is private
 * to the user: created 0700, and every use re-checks type, owner and mode with lstat.
 */

/** Base directory for leases: $BERTH_STATE_DIR, else $XDG_RUNTIME_DIR/berth, else /tmp/berth-<uid>. */
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
