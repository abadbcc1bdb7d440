import type { PortRange } from '../../host/host-map.js';
import type { TemplatePart } from './placeholders.js';
import type { ServiceSpec } from './spec.js';

/*
 * A service as the loader read it, before the checks that need every service: its spec and
 * the lines those checks point at.
 */

export interface Template {
  /** "command[2]", "env MODEL", "ready" */
  where: string;
  line: number;
  parts: TemplatePart[];
}

/** A service as read, with the lines the cross-service checks point at. */
export interface Draft {
  spec: ServiceSpec;
  templates: Template[];
  source?:
    | { kind: 'band'; name: string; line: number }
    | { kind: 'port'; port: number; line: number }
    | { kind: 'range'; range: PortRange; line: number }
    | { kind: 'none'; line: number };
  instance?: { n: number; line: number };
  /** Line of `ports:`, when given. */
  portsLine?: number;
  /** Line of `port: learn`, when given. */
  learnLine?: number;
  /** `ports:` was broken: its names are unknown, so placeholders naming them are not checked. */
  portsBroken?: boolean;
  /** `templates:` was broken (reported): placeholders naming templates are not checked. */
  templatesBroken?: boolean;
  replicasLine: number;
  jobLine: number;
  readyLine: number;
  /** Fields were broken: skip checks that would only repeat the problem. */
  broken: boolean;
}

/** Every service as read, by name too: what the checks across services (stack-checks.ts) look at. */
export interface StackDrafts {
  readonly drafts: readonly Draft[];
  readonly byName: ReadonlyMap<string, Draft>;
  readonly names: readonly string[];
}
