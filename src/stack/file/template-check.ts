import { leasedEntries, type AssignedPorts, type PortEntry } from '../../allocate/port-set.js';
import { readInputFile } from '../../util/safe-file.js';
import type { Draft, StackDrafts } from './draft.js';
import { learnedProblem, reachProblem } from './reference-rules.js';
import type { Endpoint } from './endpoint.js';
import type { SharedPorts } from './replica-context.js';
import { OWN_FIELDS, serviceNames, templateContext } from './template-context.js';
import { templateProblems, templateTagNames, type TagName } from './templates.js';

/*
 * Load-time check of a service's config templates against a stand-in of its replica context
 * (the real shape, made-up ports), so a typo stops the stack instead of rendering "" into nginx.conf.
 */

function standIn(entries: readonly PortEntry[]): AssignedPorts[] {
  return entries.map((e) => ({
    name: e.name,
    kind: e.kind === 'single' ? 'single' : 'block',
    ports: e.kind === 'block' ? Array.from({ length: e.count }, (_, i) => 1 + i) : e.kind === 'window' ? [1, 2] : [1],
  }));
}

/** What an own field is, for the message about a service named like it. */
const FIELD_WORDS: Record<string, string> = {
  node: "this replica's node name",
  host: "this replica's address",
  name: "this replica's service name",
  port: "this replica's port",
  ports: "this replica's named ports",
  rank: "this replica's rank",
  dir: 'the folder the files are rendered into',
};

/** The fields of a replica and of a service that stand for its first port. */
const PRIMARY = ['port', 'hostport', 'url', 'urls', 'hostports'];

/** A tag's problem: the text after "uses {{shown}}", reported once per `once` in a file. */
interface TagProblem {
  text: string;
  shown: string;
  once: string;
}

/** What is wrong with one tag, by the rules placeholders follow too (reference-rules.ts). */
function tagProblem(tag: TagName, draft: Draft, stack: StackDrafts): TagProblem | undefined {
  const path = tag.full.replace(/^[#^&]/, '').split('.');
  const named = stack.byName.get(tag.name);
  const ofTag = (text: string | undefined) => (text === undefined ? undefined : { text, shown: tag.full, once: `tag ${tag.full}` });
  const ofService = (text: string) => ({ text, shown: `${tag.name}…`, once: `service ${tag.name}` });
  if (OWN_FIELDS.includes(tag.name)) {
    if (named && path.length > 1) {
      // {{node.hostport}} of a service called "node": mustache finds the field first.
      const field = FIELD_WORDS[tag.name] ?? "the rendering replica's own";
      const fix = `rename the service (e.g. "${tag.name}-svc"; its replicas are also in {{#services}})`;
      const text = `, but "${tag.name}" is a field of every template (${field}), so service "${tag.name}" is not reachable as {{${tag.name}.…}}: ${fix}`;
      return { ...ofService(text), shown: tag.full };
    }
    if (tag.section !== undefined) return entryProblem(tag, tag.section, path, draft, stack);
    if (tag.name === 'ports' && path.length > 1) return ofTag(learnedProblem(draft, draft, path[1], 'template'));
    return PRIMARY.includes(tag.name) ? ofTag(learnedProblem(draft, draft, undefined, 'template')) : undefined;
  }
  if (!named) return undefined; // not a service: the render against the stand-in judges it
  const reach = reachProblem(draft, named);
  if (reach?.kind === 'no-port') return ofService(`, which has no port (${reach.why})`);
  if (reach) return ofService(`, which is not in its depends_on; add depends_on: { ${tag.name}: ready }`);
  if (path[1] === 'ports' && path.length > 2) return ofTag(learnedProblem(draft, named, path[2], 'template'));
  return path.length === 2 && PRIMARY.includes(path[1]!) ? ofTag(learnedProblem(draft, named, undefined, 'template')) : undefined;
}

/**
 * A replica's own field inside a section is the section's entry's: inside {{#db.replicas}},
 * {{port}} and {{ports.NAME…}} are a db replica's, known as any {{db.…}} of theirs is.
 */
function entryProblem(tag: TagName, section: string, path: readonly string[], draft: Draft, stack: StackDrafts): TagProblem | undefined {
  const [service, list] = section.split('.');
  const owner = stack.byName.get(service!);
  if (list !== 'replicas' || !owner || OWN_FIELDS.includes(service!)) return undefined;
  if (reachProblem(draft, owner)) return undefined; // the section's own tag says so
  let text: string | undefined;
  if (tag.name === 'ports' && path.length > 1) text = learnedProblem(draft, owner, path[1], 'template');
  else if (PRIMARY.includes(tag.name)) text = learnedProblem(draft, owner, undefined, 'template');
  return text === undefined ? undefined : { text, shown: tag.full, once: `tag ${section} ${tag.full}` };
}

/** Problems as [line, text] (line in the stack file; the text names the template file and its line). */
export function templateFileProblems(draft: Draft, stack: StackDrafts): [number, string][] {
  const spec = draft.spec;
  if (spec.templates.length === 0) return [];
  const label = `service "${spec.name}"`;
  const deps = new Map<string, Endpoint[]>();
  const sharedOf = new Map<string, SharedPorts>();
  for (const d of spec.dependsOn) {
    const t = stack.byName.get(d.service)?.spec;
    if (!t || t.source.kind === 'none') continue;
    deps.set(d.service, [{ host: t.host, port: 1, ports: standIn(t.ports), scheme: t.scheme }]);
    if (t.shared.length > 0) sharedOf.set(d.service, { host: t.host, ports: standIn(t.shared) });
  }
  const hasPort = spec.source.kind !== 'none';
  // Its own learned ports are not known when its templates are rendered (before it starts).
  const own = leasedEntries(spec.ports);
  if (hasPort) deps.set(spec.name, [{ host: spec.host, port: 1, ports: standIn(own), scheme: spec.scheme }]);
  const ctx = templateContext({
    name: spec.name,
    replica: 0,
    replicas: typeof spec.replicas === 'number' ? spec.replicas : 1,
    host: spec.host,
    dir: '/run',
    scheme: spec.scheme,
    ...(hasPort ? { port: spec.ports.length > 0 && spec.ports[0]!.kind !== 'learn' ? 1 : undefined, ports: standIn([...own, ...spec.shared]) } : {}),
    rank: { rank: 0, worldSize: 1, localRank: 0, nodeRank: 0, nodeCount: 1, node: 'node', generation: 0 },
    ...(spec.replicas === 'gpus' ? { gpu: 0 } : {}),
    endpoints: deps,
    sharedOf,
  });
  const out: [number, string][] = [];
  for (const t of spec.templates) {
    let text: string;
    try {
      text = readInputFile(t.file);
    } catch (e) {
      out.push([t.line, `${label}: template "${t.name}": cannot read ${t.file}: ${(e as Error).message}`]);
      continue;
    }
    const reported = new Set<string>();
    for (const tag of templateTagNames(text)) {
      const p = tagProblem(tag, draft, stack);
      if (p === undefined || reported.has(p.once)) continue;
      reported.add(p.once);
      out.push([t.line, `${label}: template "${t.name}": ${t.file}:${tag.line} uses {{${p.shown}}}${p.text}`]);
    }
    if (reported.size > 0) continue;
    for (const p of templateProblems(text, ctx, t.file, { outerNames: serviceNames(ctx) })) out.push([t.line, `${label}: template "${t.name}": ${p}`]);
  }
  return out;
}
