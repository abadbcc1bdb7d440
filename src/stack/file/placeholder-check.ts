import { didYouMean } from '../../util/did-you-mean.js';
import type { Draft, StackDrafts } from './draft.js';
import type { Placeholder } from './placeholders.js';
import { learnedProblem, reachProblem } from './reference-rules.js';

/*
 * The placeholders of every service checked against the whole stack: the ports, templates
 * and services they name must exist, a service named must be a dependency started far
 * enough, and a one-value placeholder must not stand for a service of many replicas.
 */

/** Reports each problem of one service's placeholders (and of `ready: tcp` without a port of its own). */
export function checkPlaceholders(draft: Draft, stack: StackDrafts, add: (line: number, text: string) => void): void {
  const spec = draft.spec;
  const label = `service "${spec.name}"`;
  if (spec.ready?.kind === 'tcp' && spec.source.kind === 'none') add(draft.readyLine, `${label}: "ready: tcp" needs a port, but the service has "port: none"`);
  const onlyShared = spec.source.kind !== 'none' && spec.ports.length === 0 && !draft.portsBroken;
  if (spec.ready?.kind === 'tcp' && onlyShared) {
    const shared = spec.shared.map((e) => e.name).join(', ');
    const fix = 'add a port of its own or use ready: http/cmd';
    add(draft.readyLine, `${label}: "ready: tcp" probes the replica's own port, but its only ports are shared (${shared}); ${fix}`);
  }
  const reported = new Set<string>();
  for (const template of draft.templates) {
    for (const ph of template.parts) {
      if (typeof ph === 'string') continue;
      const key = `${template.where}\0${ph.text}`;
      if (reported.has(key)) continue;
      const problem = learnedNamedProblem(ph, template.where, draft, stack) ?? placeholderProblem(ph, draft, onlyShared, stack);
      if (problem === undefined) continue;
      reported.add(key);
      add(template.line, `${label}: ${template.where} uses ${ph.text}${problem}`);
    }
  }
}

/** ", but …" when a placeholder names a learned port where that port is not known yet (reference-rules.ts). */
function learnedNamedProblem(ph: Placeholder, where: string, draft: Draft, stack: StackDrafts): string | undefined {
  if (ph.kind === 'own') return learnedProblem(draft, draft, ph.port, where);
  if (ph.kind === 'self' && ph.field === 'port') return learnedProblem(draft, draft, undefined, where);
  if (ph.kind !== 'service' || ph.field === 'dir' || ph.field === 'dirs') return undefined;
  const owner = stack.byName.get(ph.service);
  return owner ? learnedProblem(draft, owner, ph.port, where) : undefined;
}

/** ", but …" for a placeholder the stack cannot fill, or undefined. */
function placeholderProblem(ph: Placeholder, draft: Draft, onlyShared: boolean, stack: StackDrafts): string | undefined {
  const spec = draft.spec;
  if (ph.kind === 'own') {
    if (spec.source.kind === 'none') return `, but the service has "port: none"${otherPortHint(draft, ph.port, ph.text, stack)}`;
    return draft.portsBroken ? undefined : portNameProblem(ph, draft, 'its');
  }
  if (ph.kind === 'template') {
    if (draft.templatesBroken || spec.templates.some((x) => x.name === ph.template)) return undefined;
    const names = spec.templates.map((x) => x.name);
    if (names.length === 0) return ', but the service has no "templates:"; add templates: { NAME: FILE }';
    return `, but its templates are ${names.join(', ')}${didYouMean(ph.template, names)}`;
  }
  if (ph.kind === 'self') {
    if (ph.field === 'port' && spec.source.kind === 'none') return ', but the service has "port: none"';
    if (ph.field === 'port' && onlyShared) return `, but its only ports are shared; use {ports.${spec.shared[0]!.name}}`;
    if (ph.field === 'gpu' && spec.replicas !== 'gpus') return ', but the service does not have "replicas: gpus" (one replica per GPU of the Slurm job)';
    return undefined;
  }
  return servicePlaceholderProblem(ph, draft, stack);
}

/** ", but …" for a {SERVICE.…} placeholder the stack cannot fill, or undefined. */
function servicePlaceholderProblem(ph: Placeholder & { kind: 'service' }, draft: Draft, stack: StackDrafts): string | undefined {
  const spec = draft.spec;
  // Its own service is fine with nodes: too: the agents wait until every node's replicas are leased (peer-wait.ts).
  const self = ph.service === spec.name;
  const target = stack.byName.get(ph.service);
  if (!target) return `, but there is no service "${ph.service}"${didYouMean(ph.service, stack.names)}; services: ${stack.names.join(', ')}`;
  const many = target.spec.replicas === 'gpus' ? 'one replica per GPU' : `${target.spec.replicas} replicas`;
  if (ph.field === 'dir' || ph.field === 'dirs') {
    // Paths are known before anything starts: no dependency needed, but the same host.
    if (spec.nodes !== undefined || target.spec.nodes !== undefined) {
      const onNodes = (target.spec.nodes !== undefined ? target : draft).spec.name;
      return `, but a replica's directory is on its own node, and "${onNodes}" runs on the Slurm nodes (nodes:)`;
    }
    if (ph.field === 'dir' && target.spec.replicas !== 1) return `, but "${ph.service}" has ${many}; use {${ph.service}.dirs} (all of them, comma-separated)`;
    return undefined;
  }
  const reach = reachProblem(draft, target);
  if (reach?.kind === 'not-dependency') {
    return `, but "${ph.service}" is not in its depends_on; add depends_on: { ${ph.service}: ready } (or started, to need only its port)`;
  }
  if (reach?.kind === 'no-port') return `, but "${ph.service}" has no port (${reach.why})`;
  if ((ph.field === 'url' || ph.field === 'urls') && target.spec.scheme === null) {
    return `, but "${ph.service}" has "scheme: none" (no URL); use {${ph.service}.hostport${ph.field === 'urls' ? 's' : ''}}, or give it a scheme`;
  }
  if (ph.port === undefined && !target.portsBroken && target.spec.ports.length === 0) {
    return `, but "${ph.service}" has only shared ports; use {${ph.service}.port.${target.spec.shared[0]!.name}} (or .host / .hostport after it)`;
  }
  if (ph.port !== undefined && !target.portsBroken) {
    const problem = portNameProblem(ph, target, `"${ph.service}"'s`);
    if (problem) return problem;
  }
  const sharedPort = ph.port !== undefined && target.spec.shared.some((e) => e.name === ph.port);
  const acrossNodes = self && target.spec.nodes !== undefined;
  const oneValue = ph.field === 'port' || ph.field === 'url' || ph.field === 'host' || ph.field === 'hostport';
  if (!sharedPort && oneValue && (target.spec.replicas !== 1 || acrossNodes)) {
    const n = acrossNodes ? 'replicas on several nodes (nodes:)' : many;
    const rest = ph.text.slice(ph.service.length + 1 + ph.field.length + 1, -1);
    return `, but "${ph.service}" has ${n}; use {${ph.service}.${ph.field}s${rest}} (all of them, comma-separated)`;
  }
  return undefined;
}

/**
 * A portless step's {ports.X} most likely means another service's port X: name it as
 * {SVC.port.X} (its dependencies first), or say how, when no service has that port.
 */
function otherPortHint(draft: Draft, port: string, text: string, stack: StackDrafts): string {
  const has = (x: Draft) => x !== draft && [...x.spec.ports, ...x.spec.shared].some((e) => e.name === port);
  const deps = new Set(draft.spec.dependsOn.map((x) => x.service));
  const owners = stack.drafts.filter(has).sort((a, b) => Number(deps.has(b.spec.name)) - Number(deps.has(a.spec.name)));
  const field = text.slice('{ports.'.length);
  if (owners.length > 0) return `; {ports.NAME} is the service's own port: for ${owners[0]!.spec.name}'s, write {${owners[0]!.spec.name}.port.${field}`;
  return `; {ports.NAME} is the service's own port: another service's is {SERVICE.port.${field}`;
}

/** ", but … has no port NAME; …" when a placeholder names a port the set does not have. */
function portNameProblem(ph: Placeholder, owner: Draft, whose: string): string | undefined {
  const name = ph.kind === 'own' || ph.kind === 'service' ? ph.port : undefined;
  if (name === undefined || owner.spec.ports.some((e) => e.name === name) || owner.spec.shared.some((e) => e.name === name)) return undefined;
  const names = [...owner.spec.ports, ...owner.spec.shared].map((e) => e.name);
  const without = owner.spec.portsDeclared ? '' : ' (without "ports:" a service has one port, named "port")';
  return `, but ${whose} ports are ${names.join(', ')}${didYouMean(name, names)}${without}`;
}
