export type {
  DependCondition,
  Dependency,
  ReplicaCount,
  ReplicaState,
  RestartPolicy,
  ServicePorts,
  ServiceSpec,
  StackSpec,
} from './spec.js';
export { DEFAULT_HOST, DEFAULT_RESTART_LIMIT, DEFAULT_STOP_GRACE_MS, REPLICA_STATES } from './spec.js';
export { loadStack, parseStack, SERVICE_KEYS } from './load.js';
export {
  describeTemplateError,
  endpointUrl,
  KNOWN_PLACEHOLDERS,
  OWN_SET,
  parseTemplate,
  placeholdersOf,
  reachableHost,
  resolveTemplate,
  SERVICE_NAME_RE,
} from './placeholders.js';
export type { Endpoint, ParsedTemplate, Placeholder, ResolveContext, SelfField, ServiceField, TemplateError, TemplatePart } from './placeholders.js';
export { blockedServices, conditionStatus, findCycles, startable, startOrder, teardownOrder, teardownWaves } from './graph.js';
export type { Blocked, ConditionStatus, GraphNode, ReplicaStatus, StatusMap } from './graph.js';
export { applyUpdate, checkRunDir, createRunDir, defaultRunDir, formatEvent, portsRecord, RunDir, runStamp } from './run-dir.js';
export type { EndpointRecord, EndpointsDocument, ReplicaUpdate, RunDirOptions, StackEvent } from './run-dir.js';
export { eraseFrame, formatAge, formatClock, formatEventLine, renderTable, StatusView, wantColor } from './status-view.js';
export type { RenderOptions, StatusRow, StatusStream, StatusViewOptions } from './status-view.js';
export { replicaSource } from './sources.js';
export { portsNeeded, readPortsKey } from './ports-key.js';
export { runStack } from './orchestrate.js';
export type { RunStackOptions, StackFailure, StackHandle, StackResult } from './orchestrate.js';
export type { StatusMode } from './stack-console.js';
export { formatFailure, formatStackReady, shownPath, tailLines } from './stack-messages.js';
