/* What berth reads of the host: socket rows (any state, TCP and UDP), their owners, the kernel's port sysctls; one HostMap. */

/** Inclusive port interval. */
export interface PortRange {
  lo: number;
  hi: number;
}

export type TcpState =
  | 'ESTABLISHED' | 'SYN_SENT' | 'SYN_RECV' | 'FIN_WAIT1' | 'FIN_WAIT2' | 'TIME_WAIT'
  | 'CLOSE' | 'CLOSE_WAIT' | 'LAST_ACK' | 'LISTEN' | 'CLOSING' | 'NEW_SYN_RECV' | 'UNKNOWN';

/** Which table a row came from: /proc/net/tcp{,6} or /proc/net/udp{,6} (sock_diag's TCP or UDP). */
export type SocketProtocol = 'tcp' | 'udp';

/** One row of /proc/net/tcp{,6} or udp{,6}. A UDP row is CLOSE unconnected (a server), ESTABLISHED connect()ed: either holds its port against a UDP bind. */
export interface SocketRow {
  protocol: SocketProtocol;
  family: 4 | 6;
  localAddress: string; // printable: "127.0.0.1", "::", "::ffff:127.0.0.1"
  localPort: number;
  remoteAddress: string;
  remotePort: number;
  state: TcpState;
  uid: number;
  inode: number; // 0 for TIME_WAIT and other orphaned sockets
}

export interface SocketTable {
  rows: SocketRow[];
  /** Malformed or truncated lines skipped, per file. */
  skipped: number;
}

/** Who holds a socket inode, where /proc/<pid>/fd could be read. */
export interface SocketOwner {
  pid: number;
  comm: string;
  cmdline: string[];
  uid?: number;
}

export interface HostSysctls {
  /** net.ipv4.ip_local_port_range */
  ephemeral: PortRange;
  /** net.ipv4.ip_local_reserved_ports, normalized (sorted, merged) */
  reserved: PortRange[];
  /** net.ipv4.ip_unprivileged_port_start */
  unprivilegedStart: number;
}

/** What the kernel says now (docs/leases.md). */
export interface HostMap extends HostSysctls {
  /** e.g. "net:[4026531833]"; ports are per network namespace. */
  netns: string;
  sockets: SocketRow[];
  skippedLines: number;
  /** inode -> owners; present only when owners were asked for. */
  owners?: Map<number, SocketOwner[]>;
  /** Whether the kernel has IPv6 (tcp6 readable). */
  ipv6: boolean;
  /** Which reader gave `sockets`: sock_diag through `ss`, or /proc/net/{tcp,udp}{,6} (host/socket-reader.ts). */
  via?: 'ss' | 'proc';
  readAt: string;
}
