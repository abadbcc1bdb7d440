// Public face of the allocator: leases, holds and race-free reserve().
export type { AllocationReport, Lease, LeaseRecord, PortSource, Reservation, ReserveOptions, Strategy } from './types.js';
export { DEFAULT_TTL_MS, reserve } from './reserve.js';
export { reserveSet, type SetOptions, type SetRequest } from './reserve-set.js';
export { describeNamedSet, namedReservation, namedSetRequests, reserveNamedSet, type NamedRequestBase, type NamedReservation } from './reserve-named.js';
export { blockPorts, blockStartsWithout, freeRuns, planBlockStarts, type BlockPlan } from './plan-block.js';
export * from './port-set.js';
export { busyPorts, emptyReport, planCandidates, sourceRanges, type Plan, type PlanHost, type PlanInput } from './plan.js';
export { describeInUse, describeLeased, describeSource, explainUnavailable, type ExplainInput } from './explain.js';
export { closeServer, holdPort, serverFd, type HoldError } from './hold.js';
export { leaseHandles } from './held.js';
export { currentLeases, leasesOf, scanLeases, type LeaseListOptions, type LeaseState, type ListedLease } from './leases.js';
export { releaseJob, releaseLeases, type ReleaseFilter, type ReleaseResult } from './lease-release.js';
export { readLeaseTable } from './lease-domain.js';
export { leaseTable, listNames, portName, USER_NAME_CHARS, type LeaseTable, type ListedName, type RecordInfo } from './lease-names.js';
export { HOLDER_ARGV0 } from './lease-holder.js';
