import { releaseLeases } from '../../allocate/lease-release.js';
import { parseCommandArgs, printJson, usage, type Command } from '../command.js';
import { procRoot } from '../env.js';
import { MAX_PID, parseCount, parsePort } from '../values.js';
import { userText } from '../../util/user-name.js';
import { cleanText } from '../../util/clean-text.js';

const help = `Usage: berth release [--port P]… [--owner PID] [--job ID] [--all] [--json]

End leases in this network namespace by ending their holder process: the small holder
that 'berth port --owner/--ttl' leaves (berth-lease-holder). Each user can end only their
own (root: anyone's). A lease held by berth run/up (or a library caller) ends with that
process: stop it (release names it). Leases cannot go stale: there is nothing to clean.

What a lease's record says (uid, job, owner, name) is a label anyone can forge: release
decides from what the kernel shows of the process holding the lease's socket: its real
uid (--all), the owner its 'tail --pid' watches (--owner), the SLURM_JOB_ID it started
with (--job).

Options:
  --port P      release the lease of port P (repeatable)
  --owner PID   release every lease owned by process PID
  --job ID      release every lease made inside Slurm job ID (for an epilog)
  --all         release every lease held by your processes (root too: only root's)
  --json        machine-readable output

Examples:
  berth release --port 20001
  berth release --owner $$            # at the end of a job script
  trap 'berth release --owner $$' EXIT
  berth release --job "$SLURM_JOB_ID"  # Slurm TaskEpilog (runs as the job's user)

Leases made inside a Slurm job record SLURM_JOB_ID, so --job ends those that were given a
--ttl and would otherwise outlive the job. A root Epilog may run it as root (it can end
any user's leases) or as the job's user.

Exit codes: 0 ok (also when nothing matched); 64 usage; 74 /proc/net/unix cannot be read.`;

/** Slurm job ids are numbers; leases store SLURM_JOB_ID as written, so match it as text. */
function parseJobId(text: string): string {
  if (!/^\d{1,15}$/.test(text.trim())) throw usage('release', `--job ${JSON.stringify(text)}: expected a Slurm job id (a number, as in $SLURM_JOB_ID)`);
  return String(Number(text.trim()));
}

export const releaseCommand: Command = {
  help,
  async run(argv) {
    const { values } = parseCommandArgs('release', argv, {
      port: { type: 'string', multiple: true },
      owner: { type: 'string' },
      job: { type: 'string' },
      all: { type: 'boolean' },
      json: { type: 'boolean' },
    });
    const ports = (values.port ?? []).map((p) => parsePort('release', '--port', p));
    if (ports.length === 0 && values.owner === undefined && values.job === undefined && !values.all) {
      throw usage('release', 'say what to release: --port P, --owner PID, --job ID or --all');
    }
    const result = await releaseLeases({
      ports,
      all: values.all === true,
      ...(values.owner !== undefined ? { ownerPid: parseCount('release', '--owner', values.owner, 1, MAX_PID) } : {}),
      ...(values.job !== undefined ? { jobId: parseJobId(values.job) } : {}),
      procRoot: procRoot(),
    });
    const refused = result.notOurs.filter((n) => n.targeted);
    if (values.json) printJson({ released: result.released.map((l) => l.port), cleaned: result.cleaned, notOurs: result.notOurs, heldBy: result.heldBy });
    else {
      process.stdout.write(result.released.length > 0 ? `released ${result.released.map((l) => l.port).join(' ')}\n` : 'no matching lease\n');
      for (const n of refused) {
        const who = n.uid === undefined ? 'another user' : userText(n.uid);
        process.stderr.write(
          n.why === 'other-user'
            ? `berth: port ${n.port}: the lease is ${who}'s; only that user or root can release it\n`
            : n.why === 'not-proven'
              ? `berth: port ${n.port}: its name is not listed as berth binds it (padded to 107 bytes): a forged or foreign name; nothing was signalled\n`
              : `berth: port ${n.port}: its holder is not visible from here (another container's or pid namespace's process); release it from there\n`,
        );
      }
      for (const h of result.heldBy)
        process.stderr.write(
          `berth: port ${h.port}: held by pid ${h.pid} (${cleanText(h.command.slice(0, 80))}), not a lease holder; the lease ends when that process does: ` +
            `stop it\n`,
        );
    }
    return 0;
  },
};
