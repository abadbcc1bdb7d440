import type { PortRange } from '../../host/host-map.js';
import type { TemplatePart } from './placeholders.js';
import type { ServiceSpec } from './spec.js';

export interface Template {
  /** "command[2]", "env MODEL", "ready" */
  where: string;
  line: number;
  parts: TemplatePart[];
}

/** A service as the loader read it, with the lines the checks across services point at. */
export interface Draft {
  spec: ServiceSpec;
  templates: Template[];
  source?:
    | { kind: 'band'; name: string; line: number }
    | { kind: 'port'; port: number; line: number }
    | { kind: 'range'; range: PortRange; line: number }
    | { kind: 'none'; line: number };
  instance?: { n: number; line: number };
  portsLine?: number;
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
