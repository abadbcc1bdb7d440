// Public face of `berth run` as a library: launch a service on a held port and supervise it.
export type {
  AuditFinding,
  ExitInfo,
  ForeignListener,
  Handoff,
  LaunchEvent,
  LaunchHandle,
  LaunchOptions,
  LaunchPhase,
  ReadyInfo,
  ReadySpec,
  StrayRule,
} from './types.js';
export { exitStatus, launch, LaunchError } from './launch.js';
export { checkReadyWithHandoff, formatReadySpec, parseReadySpec } from './ready-spec.js';
export { chooseProbeHost, hostPort } from './probe-host.js';
export { probeCmd, probeHttp, probeTcp, type ProbeResult } from './probes.js';
export { parseStatIds, ProcessTree, type TreeMember } from './process-tree.js';
export { checkOwnership, readPortRows, type Ownership } from './ownership.js';
export { redactArgv, redactEnv } from '../util/redact.js';
