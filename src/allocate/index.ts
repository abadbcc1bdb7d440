// Public face of the allocator: leases, holds and race-free reserve().
export type { AllocationReport, Lease, LeaseRecord, PortSource, Reservation, ReserveOptions, Strategy } from './types.js';
export { DEFAULT_TTL_MS, reserve } from './reserve.js';
export { busyPorts, emptyReport, planCandidates, sourceRanges, type Plan, type PlanHost, type PlanInput } from './plan.js';
export { describeInUse, describeLeased, describeSource, explainUnavailable, type ExplainInput } from './explain.js';
export { closeServer, holdPort, serverFd, type HoldError } from './hold.js';
export { leaseIsLive, leaseState, newLeaseRecord, parseLeaseRecord, type LeaseState, type NewLeaseInput, type StartTimeOf } from './lease-record.js';
export {
  acquireLease,
  cleanLeftovers,
  createLeaseFile,
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
  type LeaseFile,
  type LeaseIdentity,
  type LeaseScan,
  type LeaseStoreOptions,
  type ListedLease,
  type ReleaseFilter,
  type ReleaseResult,
  type TakeResult,
} from './lease-store.js';
export { currentLeases, leaseDir, releaseJob, releaseLeases, type LeaseDirOptions } from './leases.js';
export { checkPrivateDir, netnsDirName, openStateDir, resolveStateDir } from './state-dir.js';
