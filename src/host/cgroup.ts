import { mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/*
 * A cgroup v2 directory per launch: the one mark of a process tree that nothing inside can shed
 * (setsid, env -i or a double fork lose session, marker and parent; only a writer of cgroup.procs
 * can leave). Where berth may not make one, cgroupUnavailable says why and the tree is found as before.
 */

/** Where this process's own cgroup v2 directory is, from /proc/self/mountinfo and /proc/self/cgroup (pure). */
export function ownCgroupDir(mountinfo: string, selfCgroup: string): string | undefined {
  const line = selfCgroup.split('\n').find((l) => l.startsWith('0::'));
  if (line === undefined) return undefined;
  const path = line.slice(3);
  for (const row of mountinfo.split('\n')) {
    // "36 35 0:30 / /sys/fs/cgroup/unified rw,… - cgroup2 cgroup2 rw"
    const sep = row.indexOf(' - ');
    if (sep < 0) continue;
    const fsType = row.slice(sep + 3).split(' ')[0];
    if (fsType !== 'cgroup2') continue;
    const f = row.slice(0, sep).split(' ');
    const root = unescape(f[3] ?? '');
    const mount = unescape(f[4] ?? '');
    if (!mount.startsWith('/')) continue;
    // A mount of a subtree (a container's view) shows paths below its root.
    if (root !== '/' && path !== root && !path.startsWith(root + '/')) continue;
    const rel = root === '/' ? path : path.slice(root.length);
    return rel === '' || rel === '/' ? mount : join(mount, rel);
  }
  return undefined;
}

/** mountinfo escapes space, tab, newline and backslash as \ooo. */
function unescape(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

let own: { dir?: string; why?: string } | undefined;

function ownDir(): { dir?: string; why?: string } {
  if (own) return own;
  let mountinfo: string;
  let self: string;
  try {
    mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
    self = readFileSync('/proc/self/cgroup', 'utf8');
  } catch (e) {
    return (own = { why: `cannot read /proc/self: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}` });
  }
  const dir = ownCgroupDir(mountinfo, self);
  own = dir === undefined ? { why: 'no cgroup v2 hierarchy is mounted (mount -t cgroup2)' } : { dir };
  return own;
}

let probed: string | undefined | null = null;

/** undefined when berth can make a cgroup per launch here; otherwise why not (said by `doctor`). */
export function cgroupUnavailable(): string | undefined {
  if (probed !== null) return probed;
  const dir = makeRunCgroup(`probe-${process.pid}`);
  if (typeof dir === 'string') removeCgroup(dir);
  probed = typeof dir === 'string' ? undefined : dir.why;
  return probed;
}

/** An empty berth cgroup this old is a leftover (made by a berth killed together with its watchdog). */
const STALE_MS = 60_000;
let swept = false;

/** Once per process, removes the empty berth-* cgroups beside ours older than STALE_MS (rmdir refuses one with processes). */
function sweepStale(base: string): void {
  if (swept) return;
  swept = true;
  try {
    for (const e of readdirSync(base, { withFileTypes: true })) {
      if (!e.isDirectory() || !e.name.startsWith('berth-')) continue;
      const dir = join(base, e.name);
      try {
        if (Date.now() - statSync(dir).mtimeMs < STALE_MS) continue;
        if (!/^populated 0$/m.test(readFileSync(join(dir, 'cgroup.events'), 'latin1'))) continue;
        removeCgroup(dir);
      } catch {
        // gone meanwhile, or not ours to read
      }
    }
  } catch {
    // the listing itself failed: nothing to sweep
  }
}

/** Makes berth-<id> under berth's own cgroup: its path, or why it cannot. */
export function makeRunCgroup(id: string): string | { why: string } {
  const base = ownDir();
  if (base.dir === undefined) return { why: base.why ?? 'no cgroup' };
  sweepStale(base.dir);
  const dir = join(base.dir, `berth-${id}`);
  try {
    mkdirSync(dir);
    return dir;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    return {
      why: `cannot create a cgroup under ${base.dir} (${code}${code === 'EACCES' || code === 'EROFS' || code === 'EPERM' ? ': root, or a delegated cgroup ' +
        'subtree, is needed' : ''})`,
    };
  }
}

function moveSelf(dir: string): boolean {
  try {
    writeFileSync(join(dir, 'cgroup.procs'), String(process.pid));
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `fn` (a synchronous spawn) with berth itself in `dir`, so the child is born there, then moves
 * berth back (left there if it cannot: the process tree never counts berth's pid). inside: false when berth could not enter.
 */
export function runInCgroup<T>(dir: string, fn: () => T): { value: T; inside: boolean } {
  const base = ownDir().dir!;
  const inside = moveSelf(dir);
  try {
    return { value: fn(), inside };
  } finally {
    if (inside && !moveSelf(base)) moveSelf(base);
  }
}

/** Pids in `dir` and every cgroup below it (a service may make its own), in the reader's PID namespace. */
export function cgroupPids(dir: string): number[] {
  const out: number[] = [];
  const walk = (d: string, depth: number) => {
    try {
      for (const line of readFileSync(join(d, 'cgroup.procs'), 'latin1').split('\n')) {
        const pid = Number(line);
        // 0: a process outside the reader's PID namespace.
        if (line !== '' && pid > 0) out.push(pid);
      }
      if (depth > 16) return;
      for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(join(d, e.name), depth + 1);
    } catch {
      // gone (removed meanwhile)
    }
  };
  walk(dir, 0);
  return out;
}

/** Removes `dir` and the cgroups below it, deepest first; false when one still has processes (EBUSY) or cannot be removed. */
export function removeCgroup(dir: string): boolean {
  try {
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) removeCgroup(join(dir, e.name));
    rmdirSync(dir);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT';
  }
}
