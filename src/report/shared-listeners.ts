import type { SocketOwner, SocketRow } from '../host/host-map.js';
import type { Finding } from '../layout/layout-model.js';
import { formatArgv } from './format.js';

/*
 * Ports whose LISTEN sockets belong to more than one process (a second server of a SO_REUSEPORT
 * group, a listener on the other family's address). A socket shared across fork() is one
 * listener: a port is shown when two of its listeners have no holder in common.
 */

type Row = SocketRow & { owners?: SocketOwner[] };

function holders(r: Row): string[] {
  return r.owners && r.owners.length > 0 ? r.owners.map((o) => `pid ${o.pid}`) : [`uid ${r.uid} (not visible)`];
}

/** One warning per port with listeners of several processes, naming every pid, its command and address. */
export function sharedListenerFindings(sockets: readonly Row[]): Finding[] {
  const byPort = new Map<number, Row[]>();
  for (const r of sockets) {
    if (r.state !== 'LISTEN' || r.inode === 0) continue;
    const list = byPort.get(r.localPort) ?? [];
    if (!list.some((x) => x.inode === r.inode)) list.push(r);
    byPort.set(r.localPort, list);
  }
  const out: Finding[] = [];
  for (const [port, rows] of [...byPort].sort((a, b) => a[0] - b[0])) {
    const sets = rows.map((r) => new Set(holders(r)));
    const apart = sets.some((a, i) => sets.slice(i + 1).some((b) => ![...a].some((h) => b.has(h))));
    if (!apart) continue;
    const parts = rows.map((r) => {
      const who =
        r.owners && r.owners.length > 0
          ? r.owners.map((o) => `pid ${o.pid} (${formatArgv(o.cmdline) || o.comm || '?'})`).join(', ')
          : `uid ${r.uid} (process not visible)`;
      return `${who} on ${r.family === 6 ? `[${r.localAddress}]` : r.localAddress}`;
    });
    const groups = new Set(rows.map((r) => `${r.family} ${r.localAddress}`));
    const reuse =
      groups.size < rows.length ? '; sockets on the same address share it through SO_REUSEPORT: the kernel splits new connections between them' : '';
    const pids = [...new Set(rows.flatMap((r) => (r.owners ?? []).map((o) => o.pid)))];
    out.push({
      severity: 'warning',
      code: 'port-shared-listeners',
      message: `port ${port} has listeners of ${pids.length > 1 ? `${pids.length} processes` : 'more than one process'}: ${parts.join('; ')}${reuse}`,
      ranges: [{ lo: port, hi: port }],
    });
  }
  return out;
}
