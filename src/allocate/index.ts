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
export { isBlocking, leaseIsLive, leaseState, newLeaseRecord, parseLeaseRecord, type LeaseState, type NewLeaseInput, type StartTimeOf } from './lease-record.js';
export {
  acquireLease,
  cleanLeftovers,
  commitLeases,
  createLeaseFile,
  judgeLease,
  LEASE_SUFFIX,
  leasePath,
  leaseStillOurs,
  listLeases,
  portOfLeaseName,
  readLeaseFile,
  releaseLeasesIn,
  removeOwnLease,
  scanLeaseDir,
  takeAway,
  type AcquireResult,
  type GarbageLease,
  type LeaseFile,
  type LeaseIdentity,
  type LeaseScan,
  type LeaseStoreOptions,
  type ListedLease,
  type ReleaseFilter,
  type ReleaseResult,
  type TakeResult,
} from './lease-store.js';
export { currentLeases, leaseDir, leaseLocation, openLeases, releaseJob, releaseLeases, scanLeases, type LeaseDirOptions } from './leases.js';
export { checkPrivateDir, DEFAULT_LEASE_ROOT, netnsDirName, openLeaseDir, openStateDir, resolveLeaseLocation, resolveStateDir, type LeaseDir, type LeaseLocation } from './state-dir.js';
