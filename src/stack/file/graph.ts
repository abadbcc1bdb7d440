import type { DependCondition, ReplicaState } from './spec.js';

/*
 * The service graph, pure: which order to start in, what may start now, what order to stop
 * in. Dependencies on services that do not exist are ignored here (the loader reports them).
 */

export interface GraphNode {
  name: string;
  dependsOn: readonly { service: string; condition: DependCondition }[];
}

export interface ReplicaStatus {
  state: ReplicaState;
  /** Exit status once exited (null when killed by a signal). */
  code?: number | null;
}

export type ConditionStatus = 'met' | 'waiting' | 'never';

/**
 * Every dependency cycle found by one depth-first walk (one per back edge), each as a path
 * that returns to its start: ["a", "b", "a"]. Walk order is file order, so output is stable.
 */
export function findCycles(nodes: readonly GraphNode[]): string[][] {
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const state = new Map<string, 'active' | 'done'>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (name: string): void => {
    state.set(name, 'active');
    stack.push(name);
    for (const d of byName.get(name)!.dependsOn) {
      if (!byName.has(d.service)) continue;
      const s = state.get(d.service);
      if (s === 'active') cycles.push([...stack.slice(stack.indexOf(d.service)), d.service]);
      else if (s === undefined) visit(d.service);
    }
    stack.pop();
    state.set(name, 'done');
  };
  for (const n of nodes) if (!state.has(n.name)) visit(n.name);
  return cycles;
}

/**
 * A start order in which every service comes after its dependencies; among services that
 * could go next, file order. Services inside a cycle are left out (the loader refuses cycles).
 */
export function startOrder(nodes: readonly GraphNode[]): string[] {
  const known = new Set(nodes.map((n) => n.name));
  const placed = new Set<string>();
  const order: string[] = [];
  for (let progress = true; progress; ) {
    progress = false;
    for (const n of nodes) {
      if (placed.has(n.name)) continue;
      if (n.dependsOn.every((d) => !known.has(d.service) || placed.has(d.service))) {
        placed.add(n.name);
        order.push(n.name);
        progress = true;
        break; // restart from the top so file order wins among the ready ones
      }
    }
  }
  return order;
}

const STARTED: ReadonlySet<ReplicaState> = new Set(['starting', 'owned', 'ready', 'stopping', 'exited']);

/**
 * Whether a dependency's condition holds, given the states of all its replicas. "never"
 * means it cannot hold any more as things stand (failed, or exited when readiness was asked);
 * a caller that restarts the dependency asks again after the restart.
 */
export function conditionStatus(condition: DependCondition, replicas: readonly ReplicaStatus[]): ConditionStatus {
  if (replicas.some((r) => r.state === 'failed')) return 'never';
  switch (condition) {
    case 'started':
      return replicas.length > 0 && replicas.every((r) => STARTED.has(r.state)) ? 'met' : 'waiting';
    case 'ready':
      if (replicas.some((r) => r.state === 'exited' || r.state === 'stopping')) return 'never';
      return replicas.length > 0 && replicas.every((r) => r.state === 'ready') ? 'met' : 'waiting';
    case 'completed':
      if (replicas.some((r) => r.state === 'exited' && r.code !== 0)) return 'never';
      return replicas.length > 0 && replicas.every((r) => r.state === 'exited' && r.code === 0) ? 'met' : 'waiting';
  }
}

export type StatusMap = ReadonlyMap<string, readonly ReplicaStatus[]>;

const notStarted = (status: StatusMap, name: string): boolean => (status.get(name) ?? []).every((r) => r.state === 'pending');

/** Services, in file order, whose replicas are all still pending and whose every dependency is met. */
export function startable(nodes: readonly GraphNode[], status: StatusMap): string[] {
  const known = new Set(nodes.map((n) => n.name));
  return nodes
    .filter((n) => notStarted(status, n.name))
    .filter((n) => n.dependsOn.every((d) => !known.has(d.service) || conditionStatus(d.condition, status.get(d.service) ?? []) === 'met'))
    .map((n) => n.name);
}

export interface Blocked {
  service: string;
  dependency: string;
  condition: DependCondition;
}

/** Pending services with a dependency whose condition can no longer hold: the stack cannot finish starting. */
export function blockedServices(nodes: readonly GraphNode[], status: StatusMap): Blocked[] {
  const known = new Set(nodes.map((n) => n.name));
  const out: Blocked[] = [];
  for (const n of nodes) {
    if (!notStarted(status, n.name)) continue;
    for (const d of n.dependsOn) {
      if (known.has(d.service) && conditionStatus(d.condition, status.get(d.service) ?? []) === 'never') {
        out.push({ service: n.name, dependency: d.service, condition: d.condition });
      }
    }
  }
  return out;
}

/** Each started service's last start, and a test of those of `remaining` that another of them depends on (so must outlive it). */
function stopState(nodes: readonly GraphNode[], started: readonly string[]) {
  const lastStart = new Map(started.map((name, i) => [name, i]));
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const dependedOn = (remaining: ReadonlySet<string>): Set<string> => {
    const out = new Set<string>();
    for (const name of remaining) {
      for (const d of byName.get(name)?.dependsOn ?? []) if (d.service !== name && remaining.has(d.service)) out.add(d.service);
    }
    return out;
  };
  return { lastStart, remaining: new Set(lastStart.keys()), dependedOn };
}

/**
 * Stop order for the services in `started` (listed in the order they started; a restarted
 * service may be listed again, its last start counts): each service before everything it
 * depends on, latest started first, in groups that may stop concurrently (each wave only
 * after the previous one has exited).
 */
export function teardownWaves(nodes: readonly GraphNode[], started: readonly string[]): string[][] {
  const { lastStart, remaining, dependedOn } = stopState(nodes, started);
  const waves: string[][] = [];
  while (remaining.size > 0) {
    const hasDependent = dependedOn(remaining);
    let wave = [...remaining].filter((n) => !hasDependent.has(n));
    // A cycle (never loaded, but be total): stop the rest by start order alone.
    if (wave.length === 0) wave = [...remaining];
    wave.sort((a, b) => lastStart.get(b)! - lastStart.get(a)!);
    for (const n of wave) remaining.delete(n);
    waves.push(wave);
  }
  return waves;
}

/** Sequential stop order: repeatedly the latest-started service that no remaining service depends on. */
export function teardownOrder(nodes: readonly GraphNode[], started: readonly string[]): string[] {
  const { lastStart, remaining, dependedOn } = stopState(nodes, started);
  const order: string[] = [];
  while (remaining.size > 0) {
    const hasDependent = dependedOn(remaining);
    const free = [...remaining].filter((n) => !hasDependent.has(n));
    // Only a cycle leaves no candidate (never loaded, but be total): then start order alone.
    const pick = (free.length > 0 ? free : [...remaining]).reduce((a, b) => (lastStart.get(b)! > lastStart.get(a)! ? b : a));
    remaining.delete(pick);
    order.push(pick);
  }
  return order;
}
