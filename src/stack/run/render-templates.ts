import { mkdirSync } from 'node:fs';
import { BerthError, EXIT } from '../../errors.js';
import type { ReplicaContext } from '../file/replica-context.js';
import { replicaDirPath } from '../file/replica-dir-path.js';
import type { Replica } from './replica.js';
import type { StackRun } from './stack-run.js';
import { serviceNames, templateContext } from '../file/template-context.js';
import { renderTemplateFile, type RenderedTemplate } from '../file/templates.js';
import { lookUp } from './replica-dir.js';

/*
 * A replica's config files, rendered before each of its starts into its own directory,
 * <run>/data/<service>-<replica>/ ({dir}, {{dir}}: one folder, one name), from what its
 * placeholders see now (its ports, its dependencies' replicas): a ZooKeeper `myid` lands in
 * its dataDir. They stay in the run folder, so a failed start can be read back with the
 * very file the program was given. Templates and placeholders render from the one context
 * (start-attempt.ts resolveContext).
 */

export function renderReplicaTemplates(st: StackRun, rep: Replica, ctx: ReplicaContext): RenderedTemplate[] {
  const s = rep.svc.spec;
  if (s.templates.length === 0) return [];
  // Made by start-attempt.ts (makeReplicaDir) before this; the stand-in is for callers without it.
  const dir = ctx.dir ?? replicaDirPath(st.run.path, s.name, rep.index);
  const context = templateContext({ ...ctx, dir });
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (e) {
    throw new BerthError(EXIT.IOERR, `cannot create ${dir} for the rendered templates of ${s.name}/${rep.index}: ${(e as Error).message}`, { path: dir });
  }
  // A dir_owner's directory is that user's: so is each file rendered into it (root gives it
  // away; the user reads it, and finds it its own again after a restart's new rendering).
  const me = process.getuid?.() ?? 0;
  const ids = s.dirOwner !== undefined && me === 0 ? lookUp(s, s.dirOwner) : undefined;
  const owner = ids !== undefined && ids.uid !== me ? { uid: ids.uid, gid: ids.gid } : undefined;
  return s.templates.map((t) => renderTemplateFile(t.file, context, dir, { outerNames: serviceNames(context), ...(owner ? { owner } : {}) }));
}
