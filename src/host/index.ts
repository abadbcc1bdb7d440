/*
 * host/: what the Linux host says now, read from an injectable /proc root: the port ranges
 * (sysctls), every TCP and UDP socket in any state (the /proc tables, or `ss` for a big
 * table), which processes own them, process facts, and (cgroup.ts, real /proc and /sys only)
 * the cgroup v2 directory a launch is born in. Reads and reports; decides nothing.
 * May import: src/errors. It is the floor every other folder reads the host through.
 */
export type { HostMap, HostSysctls, PortRange, SocketOwner, SocketProtocol, SocketRow, SocketTable, TcpState } from './host-map.js';
export { formatRange, inRanges, intersectRanges, normalizeRanges, rangeSize, subtractRanges, unreservedEphemeral } from './intervals.js';
export { parseStatPpid, parseStatStartTime, processStartTime } from './proc-stat.js';
export { formatReservedPorts, parsePortRange, parseReservedPorts, parseUnprivilegedStart, readSysctls, sysctlDir } from './sysctl.js';
export { formatIPv6 } from './proc-net-address.js';
export { parseTcpTable, portsInUse, tcpStateName, type ParseTcpOptions } from './socket-table.js';
export { findSocketOwners, parseCmdline, parseStatusUid, socketInode } from './owners.js';
export { listPids } from './proc-read.js';
export { describeOwner, readHostMap, readNetns, socketsOnPort, udpStateName, type ReadHostOptions } from './read-host.js';
export {
  readSockets,
  readSocketsAsync,
  SS_MIN_ROWS,
  ssUnusable,
  tableSize,
  type ReaderChoice,
  type ReadSocketsOptions,
  type SocketRead,
} from './socket-reader.js';
export { parseSsOutput, ssArgs } from './ss-output.js';
export { nsInode, ownerCheck, readEnvValue, readPidns, readProcFacts, type ProcFacts } from './proc-facts.js';
