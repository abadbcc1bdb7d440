import type { TemplatePart } from './placeholders.js';
import type { ServiceSpec } from './spec.js';

/*
 * One-shot setup steps (initdb, a migration, `redis-cli --cluster create`): a service that
 * runs to completion instead of serving. The rule, decided here once for the whole stack:
 *   - a service some dependent waits for with `depends_on: { x: completed }` is a one-shot
 *     step, and gets no port unless it declares one (band, port, range, ports:, {port} or
 *     {ports.…}, ready: tcp);
 *   - so is any other non-job service with no `ready:` that declares no port (it may still
 *     get the implicit one, for a program that reads $PORT);
 *   - a one-shot step's exit 0 is its completion, even before it was ready (it never need
 *     own a port); a non-zero exit fails the stack as any service's does.
 * Everything else is a server: exiting, even with 0, before it is ready is a failure.
 */

/** What this needs of a service as read (draft.ts). */
interface Read {
  spec: ServiceSpec;
  templates: { parts: TemplatePart[] }[];
  source?: unknown;
  learnLine?: number;
}

/** Declares a port of its own: a source key, `ports:`, `port: learn`, {port} / {ports.…}, or `ready: tcp`. */
export function declaresPort(d: Read): boolean {
  if (d.source || d.spec.portsDeclared || d.learnLine !== undefined || d.spec.ready?.kind === 'tcp') return true;
  return d.templates.some((t) => t.parts.some((x) => typeof x !== 'string' && ((x.kind === 'self' && x.field === 'port') || x.kind === 'own')));
}

/** Marks every one-shot step (spec.oneShot); returns those that get no port unless they declare one. */
export function markOneShots(drafts: readonly Read[]): Set<string> {
  const awaited = new Set(drafts.flatMap((d) => d.spec.dependsOn.filter((x) => x.condition === 'completed').map((x) => x.service)));
  const portless = new Set<string>();
  for (const d of drafts) {
    if (d.spec.job) continue;
    const declared = declaresPort(d);
    if (awaited.has(d.spec.name)) {
      d.spec.oneShot = true;
      if (!declared) portless.add(d.spec.name);
    } else if (d.spec.ready === undefined && !declared) {
      d.spec.oneShot = true;
    }
  }
  return portless;
}

/** The fix to name when a server exits 0 before it is ready (what makes it a one-shot step). */
export function oneShotFix(service: string): string {
  return `if "${service}" is a one-shot step (a migration, initdb), let the services that need it wait with depends_on: { ${service}: completed } (it then ` +
    `gets no port unless it declares one); a server must keep running until it is ready`;
}
