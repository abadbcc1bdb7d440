import { join } from 'node:path';
import { readHostMap, socketsOnPort, describeOwner } from '../host/read-host.js';
import type { HostMap } from '../host/host-map.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { redactArgv, redactJson } from '../util/redact.js';

/*
 * The bundle is written before any cleanup (so the socket rows and owners show the state
 * that caused the failure), into the run folder that already holds stdout.log/stderr.log.
 * Reading the host must not turn one failure into another: every read is best effort and a
 * failed read is recorded in the bundle instead.
 */

const BUNDLE_FILE = 'diagnostics.json';

export interface HostSnapshot {
  netns?: string;
  ephemeral?: { lo: number; hi: number };
  reserved?: { lo: number; hi: number }[];
  unprivilegedStart?: number;
  ipv6?: boolean;
  readAt?: string;
  error?: string;
  /** Every socket on the port, with its holders where visible. */
  sockets: {
    protocol: 'tcp' | 'udp';
    family: 4 | 6;
    local: string;
    remote: string;
    state: string;
    uid: number;
    inode: number;
    holder: string;
    owners: { pid: number; comm: string; cmdline: string[]; uid?: number }[];
  }[];
}

export function snapshotHost(procRoot: string, port: number | undefined): HostSnapshot {
  let map: HostMap;
  try {
    const bare = readHostMap({ procRoot });
    const inodes = new Set(port === undefined ? [] : socketsOnPort(bare, port).map((r) => r.inode).filter((i) => i !== 0));
    map = inodes.size > 0 ? readHostMap({ procRoot, owners: inodes }) : bare;
  } catch (e) {
    return { error: (e as Error).message, sockets: [] };
  }
  const ep = (a: string, p: number, fam: 4 | 6) => (fam === 6 ? `[${a}]:${p}` : `${a}:${p}`);
  return {
    netns: map.netns,
    ephemeral: map.ephemeral,
    reserved: map.reserved,
    unprivilegedStart: map.unprivilegedStart,
    ipv6: map.ipv6,
    readAt: map.readAt,
    sockets:
      port === undefined
        ? []
        : socketsOnPort(map, port).map((r) => ({
            protocol: r.protocol,
            family: r.family,
            local: ep(r.localAddress, r.localPort, r.family),
            remote: ep(r.remoteAddress, r.remotePort, r.family),
            state: r.state,
            uid: r.uid,
            inode: r.inode,
            holder: describeOwner(map, r),
            owners: (map.owners?.get(r.inode) ?? []).map((o) => ({
              pid: o.pid,
              comm: o.comm,
              cmdline: redactArgv(o.cmdline),
              ...(o.uid !== undefined ? { uid: o.uid } : {}),
            })),
          })),
  };
}

/** Writes <dir>/diagnostics.json atomically; returns its path. */
export function writeBundle(dir: string, data: Record<string, unknown>): string {
  const path = join(dir, BUNDLE_FILE);
  // Every string passes the redaction rules (redact.ts): messages and details may quote a
  // command line, a URL or a header.
  writeFileAtomic(path, JSON.stringify(data, redactJson, 2) + '\n');
  return path;
}
