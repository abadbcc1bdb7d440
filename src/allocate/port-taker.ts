import { findSocketOwners } from '../host/owners.js';
import { readHostMap } from '../host/read-host.js';
import type { SocketRow } from '../host/host-map.js';
import { describeInUse } from './explain.js';

/*
 * Who has a port now, for a message after a bind of it failed: the socket table's rows on
 * the port (LISTEN first) and their processes. Read only after a failure: walking
 * /proc/<pid>/fd is the expensive part.
 */

function rank(r: SocketRow): number {
  if (r.state === 'LISTEN') return 0;
  if (r.inode !== 0) return 1;
  return 2;
}

/**
 * "20101 LISTEN by pid 4242 (python3 -m http.server 20101)", or undefined when no socket is
 * listed; `udp`: only the port's UDP sockets ("20101 UDP socket by pid …").
 */
export function portTaker(port: number, procRoot = '/proc', udp = false): string | undefined {
  let rows: SocketRow[];
  try {
    rows = readHostMap({ procRoot, localPorts: [{ lo: port, hi: port }] }).sockets.filter((r) => r.localPort === port && (!udp || r.protocol === 'udp'));
  } catch {
    return undefined;
  }
  if (rows.length === 0) return undefined;
  const row = [...rows].sort((a, b) => rank(a) - rank(b))[0]!;
  const owner = row.inode !== 0 ? findSocketOwners(procRoot, new Set([row.inode])).get(row.inode)?.[0] : undefined;
  const u: Parameters<typeof describeInUse>[0] = { port, state: row.state, uid: row.uid, ...(row.protocol === 'udp' ? { protocol: 'udp' as const } : {}) };
  if (owner) {
    u.pid = owner.pid;
    u.command = owner.cmdline.length > 0 ? owner.cmdline.join(' ') : owner.comm;
  }
  return describeInUse(u, process.geteuid?.() === 0);
}
