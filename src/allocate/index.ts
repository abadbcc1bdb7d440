/*
 * allocate/: race-free leases and holds of ports from a resolved PortSource (reserveSet,
 * allocatePorts, allocateNamedSet): candidates, leases in the network namespace, held
 * sockets, retry. Which ports a caller may use is source/'s, which sits above.
 * May import: src/layout (the default band's well-known ports), src/host, src/util, src/errors.
 */
export type { AllocationReport, Lease, LeaseRecord, PortSource, Reservation, Strategy } from './allocation-types.js';
export { DEFAULT_TTL_MS, reserveSet, type SetOptions, type SetRequest } from './reserve-set.js';
export { describeNamedSet, namedReservation, namedSetRequests, type NamedRequestBase, type NamedReservation } from './reserve-named.js';
export { blockPorts, blockStartsWithout, freeRuns, planBlockStarts, type BlockPlan } from './plan-block.js';
export * from './port-set.js';
export { busyPorts, emptyReport, planCandidates, sourceRanges, type Plan, type PlanHost, type PlanInput } from './plan.js';
export { describeInUse, describeLeased, describeSource, explainUnavailable, type ExplainInput } from './explain.js';
export { closeServer, holdPort, serverFd, type HoldError } from './hold-socket.js';
export { leaseHandles } from './held-reservation.js';
export { currentLeases, leasesOf, scanLeases, type LeaseListOptions, type LeaseState, type ListedLease } from './lease-list.js';
export { releaseJob, releaseLeases, type ReleaseResult } from './lease-release.js';
export type { ReleaseFilter } from './release-plan.js';
export { readLeaseTable } from './lease-domain.js';
export { portName, USER_NAME_CHARS } from './lease-protocol.js';
export type { RecordInfo } from './lease-record.js';
export { leaseTable, listNames, type LeaseTable, type ListedName } from './lease-table.js';
export { HOLDER_ARGV0 } from './lease-holder.js';
