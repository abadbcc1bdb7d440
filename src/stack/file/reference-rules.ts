import type { Draft } from './draft.js';

/*
 * What a replica's text may name, decided once for placeholders ({db.url}, placeholder-check.ts)
 * and config template tags ({{db.url}}, template-check.ts) alike.
 */

export type ReachProblem = { kind: 'not-dependency' } | { kind: 'no-port'; why: string };

/** Why `from`'s text cannot name `target`'s ports: `target` must be a dependency (or `from` itself) with a port. */
export function reachProblem(from: Draft, target: Draft): ReachProblem | undefined {
  if (target !== from && !from.spec.dependsOn.some((x) => x.service === target.spec.name)) return { kind: 'not-dependency' };
  if (target.spec.source.kind !== 'none') return undefined;
  let why = 'a one-shot step that others wait for with "completed" gets no port unless it declares one: give it port:, band:, ports: or {port}';
  if (target.source?.kind === 'none') why = '"port: none"';
  else if (target.spec.job) why = 'a job without band, port, range or {port}';
  return { kind: 'no-port', why };
}

/**
 * ", but …" when `from`'s text names `owner`'s port `entry` (undefined: its first) and that
 * port is learned (the replica chooses it) but not yet known when the text is filled: its
 * own command, env and templates are filled before it starts; a dependent's once the
 * dependency is started, unless it waits for ready. `where` is "ready" for the ready probe.
 */
export function learnedProblem(from: Draft, owner: Draft, entry: string | undefined, where: string): string | undefined {
  const e = entry === undefined ? owner.spec.ports[0] : owner.spec.ports.find((x) => x.name === entry);
  if (e?.kind !== 'learn') return undefined;
  const name = from.spec.name;
  if (owner === from) {
    if (where === 'ready') return undefined;
    return (
      `, but "${e.name}" is a port ${name} chooses itself (learn): it is known only once the replica listens on it, ` +
      'so its own command, env and templates cannot name it; its ready probe and its dependents can'
    );
  }
  const condition = from.spec.dependsOn.find((x) => x.service === owner.spec.name)?.condition;
  if (condition !== 'started') return undefined;
  return (
    `, but "${e.name}" is a port ${owner.spec.name} chooses itself (learn), known once it is ready, ` +
    `and ${name} waits only for it to be started; write depends_on: { ${owner.spec.name}: ready }`
  );
}
