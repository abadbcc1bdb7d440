import { readdirSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { allDigits, listPids, tryRead } from './proc-read.js';
import type { SocketOwner } from './host-map.js';

/*
 * Who holds which socket, from /proc/<pid>/fd/* links "socket:[INODE]". Processes come and go,
 * and other users' fd directories are unreadable: any per-process read failure is "not visible".
 */

const SOCKET_PREFIX = 'socket:[';

/** Inode of a "socket:[123]" link target, undefined for anything else. */
export function socketInode(target: string): number | undefined {
  if (!target.startsWith(SOCKET_PREFIX) || target.charCodeAt(target.length - 1) !== 93 /* ] */) return undefined;
  const digits = target.slice(SOCKET_PREFIX.length, -1);
  return digits.length <= 15 && allDigits(digits) ? Number(digits) : undefined;
}

/** Real uid from the "Uid:\treal\teffective\tsaved\tfs" line of /proc/<pid>/status. */
export function parseStatusUid(status: string): number | undefined {
  let at = 0;
  if (!status.startsWith('Uid:')) {
    const k = status.indexOf('\nUid:');
    if (k < 0) return undefined;
    at = k + 1;
  }
  let i = at + 4;
  while (status.charCodeAt(i) === 9 || status.charCodeAt(i) === 32) i++;
  let j = i;
  while (j < status.length && status.charCodeAt(j) >= 48 && status.charCodeAt(j) <= 57) j++;
  return j > i ? Number(status.slice(i, j)) : undefined;
}

/** argv from /proc/<pid>/cmdline: NUL-separated with a trailing NUL; empty for kernel threads. */
export function parseCmdline(raw: string): string[] {
  if (raw.length === 0) return [];
  const parts = raw.split('\0');
  if (parts[parts.length - 1] === '') parts.pop();
  return parts;
}

function describeProcess(procRoot: string, pid: number): SocketOwner {
  const dir = join(procRoot, String(pid));
  const comm = (tryRead(join(dir, 'comm')) ?? '').replace(/\n$/, '');
  const cmdline = parseCmdline(tryRead(join(dir, 'cmdline')) ?? '');
  const owner: SocketOwner = { pid, comm, cmdline };
  const status = tryRead(join(dir, 'status'));
  let uid = status === undefined ? undefined : parseStatusUid(status);
  if (uid === undefined) {
    try {
      uid = statSync(dir).uid;
    } catch {
      // vanished: leave uid unknown
    }
  }
  if (uid !== undefined) owner.uid = uid;
  return owner;
}

/** The socket inodes process `pid` holds open (only those in `wanted`, when given); empty when it cannot be read. */
export function socketsHeldBy(procRoot: string, pid: number, wanted?: ReadonlySet<number>): Set<number> {
  const held = new Set<number>();
  const fdDir = join(procRoot, String(pid), 'fd');
  let fds: string[];
  try {
    fds = readdirSync(fdDir);
  } catch {
    return held; // gone, or another user's process
  }
  for (const fd of fds) {
    let target: string;
    try {
      target = readlinkSync(join(fdDir, fd));
    } catch {
      continue; // fd closed meanwhile
    }
    const inode = socketInode(target);
    if (inode === undefined || inode === 0) continue;
    if (wanted === undefined || wanted.has(inode)) held.add(inode);
  }
  return held;
}

/** inode -> processes holding it (every holder, in pid order), for `inodes` or every socket. Costs one readlink per fd on the host. */
export function findSocketOwners(procRoot = '/proc', inodes?: ReadonlySet<number>): Map<number, SocketOwner[]> {
  const found = new Map<number, SocketOwner[]>();
  if (inodes !== undefined && inodes.size === 0) return found;
  for (const pid of listPids(procRoot).sort((a, b) => a - b)) {
    const held = socketsHeldBy(procRoot, pid, inodes);
    if (held.size === 0) continue;
    const owner = describeProcess(procRoot, pid);
    for (const inode of held) {
      const list = found.get(inode);
      if (list) list.push(owner);
      else found.set(inode, [owner]);
    }
  }
  return found;
}
