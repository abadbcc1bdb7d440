import { parseCommandArgs, printJson, type Command } from '../command.js';
import { currentLeases } from '../../allocate/lease-list.js';
import { procRoot } from '../env.js';
import { leaseHolderText, leaseOwnerText, leaseRows } from '../leases-view.js';
import { cleanText } from '../../util/clean-text.js';
import { userName } from '../../util/user-name.js';

const help = `Usage: berth leases [--live] [--json]

List berth's leases in this network namespace: every user's, every container's (whatever
its /tmp), port, state, user, holder pid, owner or expiry, name, Slurm job. States: live
(its set is committed); pending (a set still being allocated, by the berth pid shown).

A lease is a name in the network namespace's abstract Unix socket space held open by a
live process (docs/leases.md): it lasts exactly as long as its holder, so there is nothing
stale to clean. HOLDER is the process holding it, where visible (your own; root: every
process of this pid namespace): berth run/up itself, or for 'berth port --owner/--ttl' a
small holder process (berth-lease-holder). The kernel shows the same with:
  ss -xl | grep berth/v1/

Options:
  --live   only leases that block their port (all of them: kept for scripts)
  --json   machine-readable output (an array; each lease with uid, user and holders)

Examples:
  berth leases
  berth leases --json | jq '.[] | .port'

Exit codes: 0 ok; 74 /proc/net/unix cannot be read.`;

export const leasesCommand: Command = {
  help,
  async run(argv) {
    const { values } = parseCommandArgs('leases', argv, { live: { type: 'boolean' }, json: { type: 'boolean' } });
    const leases = currentLeases({ procRoot: procRoot() });
    if (values.json) {
      printJson(
        leases.map((l) => {
          const user = l.uid === undefined ? undefined : userName(l.uid);
          // A lease whose record says no time has createdAt null, never 0 (1970).
          const at = { ...l, createdAt: l.createdAt ?? null };
          return user === undefined ? at : { ...at, user };
        }),
      );
    } else if (leases.length === 0) {
      process.stdout.write('no leases in this network namespace\n');
    } else {
      const rows = leaseRows(leases).map(({ ports, lease: l, count }) => [
        ports,
        l.state,
        l.uid === undefined ? '?' : cleanText(userName(l.uid) ?? String(l.uid)),
        leaseHolderText(l),
        leaseOwnerText(l),
        `${cleanText(l.name ?? '')}${count > 1 ? `${l.name ? ' ' : ''}(${count} ports)` : ''}`,
      ]);
      const head = ['PORT', 'STATE', 'USER', 'HOLDER', 'OWNER', 'NAME'];
      const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
      const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
      process.stdout.write([line(head), ...rows.map(line)].join('\n') + '\n');
    }
    return 0;
  },
};
