export type {
  DependCondition,
  Dependency,
  ReplicaCount,
  ReplicaState,
  RestartPolicy,
  ServicePorts,
  ServiceSpec,
  StackSpec,
} from './spec/spec.js';
export { DEFAULT_HOST, DEFAULT_RESTART_LIMIT, DEFAULT_STOP_GRACE_MS, REPLICA_STATES } from './spec/spec.js';
export { loadStack, parseStack, SERVICE_KEYS } from './spec/load.js';
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
} from './spec/placeholders.js';
export type { Endpoint, ParsedTemplate, Placeholder, ResolveContext, SelfField, ServiceField, TemplateError, TemplatePart } from './spec/placeholders.js';
export { blockedServices, conditionStatus, findCycles, startable, startOrder, teardownOrder, teardownWaves } from './spec/graph.js';
export type { Blocked, ConditionStatus, GraphNode, ReplicaStatus, StatusMap } from './spec/graph.js';
export { checkRunDir, createRunDir, defaultRunDir, RunDir, runStamp } from './record/run-dir.js';
export type { RunDirOptions } from './record/run-dir.js';
export { applyUpdate, formatEvent, portsRecord } from './record/endpoints.js';
export type { EndpointRecord, EndpointsDocument, ReplicaUpdate, StackEvent } from './record/endpoints.js';
export { eraseFrame, formatAge, formatClock, formatEventLine, renderTable, StatusView, wantColor } from './record/status-view.js';
export type { RenderOptions, StatusRow, StatusStream, StatusViewOptions } from './record/status-view.js';
export { replicaSource } from './spec/sources.js';
export { portsNeeded, readPortsKey } from './spec/ports-key.js';
export { runStack } from './run/orchestrate.js';
export type { RunStackOptions, StackFailure, StackHandle, StackResult } from './run/orchestrate.js';
export type { StatusMode } from './record/stack-console.js';
export { formatFailure, formatStackReady, shownPath, tailLines } from './record/stack-messages.js';
