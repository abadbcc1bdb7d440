import { chmodSync, chownSync, lstatSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BerthError, EXIT } from '../../errors.js';
import { REPLICA_DIRS, replicaDirPath } from '../file/replica-dir-path.js';
import { placeholdersOf } from '../file/placeholders.js';
import { placeholderTexts, type ServiceSpec } from '../file/spec.js';
import { checkRunDir } from '../record/create-stack-run-dir.js';
import { userIds, type UserIds } from '../../util/user-ids.js';
import type { ReplicaContext } from '../file/replica-context.js';
import { serviceNames, templateContext } from '../file/template-context.js';
import { renderTemplateFile, type RenderedTemplate } from '../file/templates.js';

/*
 * A replica's own directory ({dir}, BERTH_REPLICA_DIR): <run dir>/data/<service>-<replica>,
 * made 0700 before its first start and kept across restarts (a database's files survive a
 * restart of its server). With `dir_owner: USER` berth (as root) gives it to that user, so a
 * server that refuses root (PostgreSQL) can run as it; the run directory and data/ then become
 * 0711, and every folder above must let USER pass too, or the start is refused naming it.
 */

/** The dir_owner's ids; the stack's load checked them already (load.ts), so a problem here is a user removed since. */
function lookUp(spec: ServiceSpec, owner: string): UserIds {
  const ids = userIds(owner);
  if ('problem' in ids) throw new BerthError(EXIT.DATAERR, `service "${spec.name}": dir_owner ${owner}: ${ids.problem}`);
  return ids;
}

/** The first folder from `dir` up that `o` may not pass through (search permission), if any. */
function blockedAt(dir: string, o: UserIds): string | undefined {
  for (let d = dir; ; d = dirname(d)) {
    const st = lstatSync(d);
    const bit = st.uid === o.uid ? 0o100 : st.gid === o.gid ? 0o010 : 0o001;
    if ((st.mode & bit) === 0) return d;
    if (dirname(d) === d) return undefined;
  }
}

/** The services whose directories a service names ({svc.dir}, {svc.dirs}): made before it starts. */
export function dirsNamed(spec: ServiceSpec): Set<string> {
  const named = placeholderTexts(spec).flatMap((t) => placeholdersOf(t));
  return new Set(named.flatMap((p) => (p.kind === 'service' && (p.field === 'dir' || p.field === 'dirs') ? [p.service] : [])));
}

/** The directory as found (a restart): a real directory of ours or its dir_owner's, never a planted link. Throws 74. */
function checkFound(dir: string, spec: ServiceSpec, replica: number): void {
  let st;
  try {
    st = lstatSync(dir);
  } catch (e) {
    throw new BerthError(EXIT.IOERR, `cannot examine ${dir}, the directory of ${spec.name}/${replica}: ${(e as Error).message}`, { path: dir });
  }
  const me = process.getuid?.() ?? 0;
  const owner = spec.dirOwner === undefined ? undefined : lookUp(spec, spec.dirOwner).uid;
  const why = st.isSymbolicLink()
    ? 'is a symbolic link (the replica\'s files could be redirected)'
    : !st.isDirectory()
      ? 'exists but is not a directory'
      : st.uid !== me && st.uid !== owner
        ? `is owned by uid ${st.uid}, not by you (uid ${me})${spec.dirOwner === undefined ? '' : ` or ${spec.dirOwner}`}`
        : undefined;
  if (why !== undefined)
    throw new BerthError(EXIT.IOERR, `replica directory ${dir} ${why}, so it is not used for ${spec.name}/${replica}; remove it, or give a new --run-dir`, {
      path: dir,
    });
}

/** Makes (or finds, on a restart) the replica's directory; returns its path. Throws BerthError. */
export function makeReplicaDir(runDir: string, spec: ServiceSpec, replica: number): string {
  const dir = replicaDirPath(runDir, spec.name, replica);
  const parent = join(runDir, REPLICA_DIRS);
  try {
    // Not recursive: the run directory exists (and was checked), and mkdir -p would follow a data/ link.
    try {
      mkdirSync(parent, { mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    // data/ as found must be the run's own, like logs/ (a link there would take every replica's files).
    checkRunDir(parent);
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if (e instanceof BerthError) throw e;
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST')
      throw new BerthError(EXIT.IOERR, `cannot create ${dir}, the directory of ${spec.name}/${replica}: ${(e as Error).message}`, { path: dir });
    checkFound(dir, spec, replica);
    return dir; // a restart: the directory and what the replica left in it stay
  }
  if (spec.dirOwner === undefined) return dir;
  const o = lookUp(spec, spec.dirOwner);
  const me = process.getuid?.() ?? 0;
  if (o.uid === me) return dir;
  if (me !== 0) {
    throw new BerthError(
      EXIT.USAGE,
      `service "${spec.name}": dir_owner ${spec.dirOwner}: only root can give ${dir} to another user, and berth runs as uid ${me}; remove dir_owner (the ` +
        `service runs as you), or run berth as root`,
    );
  }
  try {
    // Others may pass through to the directory (never list or write): USER must reach it.
    for (const d of [runDir, parent]) chmodSync(d, 0o711);
    chownSync(dir, o.uid, o.gid);
  } catch (e) {
    throw new BerthError(EXIT.IOERR, `cannot give ${dir} to ${spec.dirOwner} (dir_owner of ${spec.name}): ${(e as Error).message}`, { path: dir });
  }
  const blocked = blockedAt(dirname(runDir), o);
  if (blocked !== undefined) {
    throw new BerthError(
      EXIT.USAGE,
      `service "${spec.name}": dir_owner ${spec.dirOwner}: ${o.name} cannot reach ${dir}: it may not pass through ` +
        `${blocked} (mode ${(lstatSync(blocked).mode & 0o777).toString(8)}); use a new --run-dir in a folder every user may pass through (e.g. --run-dir ` +
          `/var/tmp/NAME, which berth makes), or let it pass: chmod o+x ${blocked}`,
    );
  }
  return dir;
}

/*
 * A replica's config files, rendered before each of its starts into its directory `dir` (made
 * by makeReplicaDir) from what its placeholders see now: a ZooKeeper `myid` lands in its
 * dataDir. They stay in the run folder, so a failed start can be read back with the very file
 * the program was given.
 */
export function renderReplicaTemplates(s: ServiceSpec, ctx: ReplicaContext, dir: string): RenderedTemplate[] {
  if (s.templates.length === 0) return [];
  const context = templateContext({ ...ctx, dir });
  // A dir_owner's directory is that user's: so is each file rendered into it (root gives it
  // away; the user reads it, and finds it its own again after a restart's new rendering).
  const me = process.getuid?.() ?? 0;
  const ids = s.dirOwner !== undefined && me === 0 ? lookUp(s, s.dirOwner) : undefined;
  const owner = ids !== undefined && ids.uid !== me ? { uid: ids.uid, gid: ids.gid } : undefined;
  return s.templates.map((t) => renderTemplateFile(t.file, context, dir, { outerNames: serviceNames(context), ...(owner ? { owner } : {}) }));
}
