// Public face of the host layer: Linux facts read from an injectable /proc root (and, in
// cgroup.ts, the cgroup v2 directory a launch is born in: real /proc and /sys only).
export type { HostMap, HostSysctls, PortRange, SocketOwner, SocketProtocol, SocketRow, SocketTable, TcpState } from './types.js';
export { formatRange, inRanges, intersectRanges, normalizeRanges, rangeSize, subtractRanges, unreservedEphemeral } from './intervals.js';
export { parseStatPpid, parseStatStartTime, processStartTime } from './proc-stat.js';
export { formatReservedPorts, parsePortRange, parseReservedPorts, parseUnprivilegedStart, readSysctls, sysctlDir } from './sysctl.js';
export { parseTcpTable, portsInUse, tcpStateName, type ParseTcpOptions } from './socket-table.js';
export { formatIPv6 } from './proc-net-address.js';
export { findSocketOwners, parseCmdline, parseStatusUid, socketInode } from './owners.js';
export { listPids } from './pids.js';
export { describeOwner, readHostMap, readNetns, socketsOnPort, udpStateName, type ReadHostOptions } from './read-host.js';
export { readSockets, readSocketsAsync, SS_MIN_ROWS, ssUnusable, tableSize } from './socket-reader.js';
export type { ReaderChoice, ReadSocketsOptions, SocketRead } from './socket-reader.js';
export { parseSsOutput, ssArgs } from './ss-output.js';
export { nsInode, ownerCheck, readEnvValue, readPidns, readProcFacts, type ProcFacts } from './proc-facts.js';
