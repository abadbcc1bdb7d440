/*
 * file/: the stack file, read and checked in one pass into its typed model, StackSpec
 * (spec.ts). load.ts reads the top level; services-key.ts each service by two tables, one
 * reader per key (service-fields.ts, with port-source-key, ports-key, templates-key,
 * ready-key, …) and the checks within a service; stack-checks.ts is the
 * table of checks that need every service. bands-key.ts reads an inline layout. Beside it the pure words every later step uses about a stack: placeholders,
 * templates, the dependency graph, ranks, a replica's port source.
 * Owns no process and no run: pure but for reading the files the stack names.
 * May import: src/allocate (port-set words), src/layout, src/host (types), src/launch
 * (types), src/util, src/errors; nothing else of src/stack.
 */
export type { DependCondition, Dependency, ReplicaCount, ReplicaState, RestartPolicy, ServicePorts, ServiceSpec, StackSpec } from './spec.js';
export { DEFAULT_HOST, DEFAULT_RESTART_LIMIT, DEFAULT_STOP_GRACE_MS, REPLICA_STATES } from './spec.js';
export { loadStack, parseStack } from './load.js';
export { SERVICE_KEYS } from './service-fields.js';
export { describeTemplateError, KNOWN_PLACEHOLDERS, OWN_SET, parseTemplate, placeholdersOf, SERVICE_NAME_RE } from './placeholders.js';
export { endpointUrl, reachableHost, type Endpoint } from './endpoint.js';
export type { ParsedTemplate, Placeholder, SelfField, ServiceField, TemplateError, TemplatePart } from './placeholders.js';
export { resolveCommand, resolveTemplate } from './fill-placeholders.js';
export type { ReplicaContext } from './replica-context.js';
export { blockedServices, conditionStatus, findCycles, startable, startOrder, teardownOrder, teardownWaves } from './graph.js';
export type { Blocked, ConditionStatus, GraphNode, ReplicaStatus, StatusMap } from './graph.js';
export { replicaSource } from './sources.js';
export { portsNeeded, readPortsKey } from './ports-key.js';
export { shownPath } from './shown-path.js';
