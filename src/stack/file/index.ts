/*
 * file/: the stack file, read and checked. load.ts reads the top level, one file per section
 * (services-key, port-source-key with ports-key, templates-key, nodes-key, bands-key) reads
 * and checks its keys, cross-check.ts what needs every service; spec.ts is the StackSpec
 * they produce. Beside it the pure words every later step uses about a stack: placeholders,
 * templates, the dependency graph, ranks, a replica's port source.
 * Owns no process and no run: pure but for reading the files the stack names.
 * May import: src/allocate (port-set words), src/layout, src/host (types), src/launch
 * (types), src/util, src/errors; nothing else of src/stack.
 */
export type { DependCondition, Dependency, ReplicaCount, ReplicaState, RestartPolicy, ServicePorts, ServiceSpec, StackSpec } from './spec.js';
export { DEFAULT_HOST, DEFAULT_RESTART_LIMIT, DEFAULT_STOP_GRACE_MS, REPLICA_STATES } from './spec.js';
export { loadStack, parseStack, SERVICE_KEYS } from './load.js';
export { describeTemplateError, KNOWN_PLACEHOLDERS, OWN_SET, parseTemplate, placeholdersOf, SERVICE_NAME_RE } from './placeholders.js';
export { endpointUrl, reachableHost } from './endpoint.js';
export type { Endpoint, ParsedTemplate, Placeholder, SelfField, ServiceField, TemplateError, TemplatePart } from './placeholders.js';
export { resolveCommand, resolveTemplate } from './fill-placeholders.js';
export type { ReplicaContext } from './replica-context.js';
export { blockedServices, conditionStatus, findCycles, startable, startOrder, teardownOrder, teardownWaves } from './graph.js';
export type { Blocked, ConditionStatus, GraphNode, ReplicaStatus, StatusMap } from './graph.js';
export { replicaSource } from './sources.js';
export { portsNeeded, readPortsKey } from './ports-key.js';
export { shownPath } from './shown-path.js';
