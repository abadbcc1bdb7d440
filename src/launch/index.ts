/*
 * launch/: `berth run` as a library: one service started on a held port, waited for until it
 * owns the port and is ready, supervised, stopped, and its diagnostics kept on failure. One
 * file per phase (launch.ts lists them); state.ts is what they share, lifecycle.ts which state
 * a launch is in (one pure transition the phases report to); watchdog/ is the process that
 * stops the services and ends their leases when berth dies without cleaning up.
 * May import: src/allocate (leases, holds, port sets), src/host, src/util, src/errors; never
 * src/stack or src/cli.
 */
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
} from './launch-api.js';
export { exitStatus, launch, LaunchError } from './launch.js';
export { checkReadyWithHandoff, formatReadySpec, parseReadySpec } from './ready-spec.js';
export { chooseProbeHost, hostPort } from './probe-host.js';
export { probeCmd, probeHttp, probeTcp, type ProbeResult } from './probes.js';
export { parseStatIds, ProcessTree, type TreeMember } from './process-tree.js';
export { checkOwnership, readPortRows, type Ownership } from './ownership.js';
export { redactArgv, redactEnv } from '../util/redact.js';
