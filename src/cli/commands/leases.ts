import { parseCommandArgs, printJson, type Command } from '../command.js';
import { scanLeases } from '../../allocate/leases.js';
import { procRoot } from '../env.js';
import { leaseNotes, leaseOwnerText, leaseRows } from '../leases-view.js';
import { cleanText } from '../../util/clean-text.js';
import { userName } from '../../util/user-name.js';

const help = `Usage: berth leases [--live] [--json]

List berth's leases in this network namespace, every user's: port, state, user, owner pid
or expiry, name, Slurm job. States: live; pending (its allocator is still building the
set); expired, owner-gone, pid-reused, abandoned (stale: the next allocation or 'berth
release' reclaims them, if they are yours, or as root). A stale lease of another user
blocks its port until that user or root removes it, or it expires; it is listed with a hint.

Leases live in /tmp/berth/net-<namespace> (shared by all users, mode 1777), or under
$BERTH_LEASE_DIR; $BERTH_STATE_DIR gives a private directory of one user (for tests).

Options:
  --live   only leases that block their port (live or pending)
  --json   machine-readable output (an array; each lease with uid and user)

Examples:
  berth leases
  berth leases --json | jq '.[] | select(.live) | .port'

Exit codes: 0 ok; 74 the lease directory is unsafe or unreadable.`;

export const leasesCommand: Command = {
  name: 'leases',
  summary: 'list port leases with owners and liveness',
  help,
  async run(argv) {
    const { values } = parseCommandArgs('leases', argv, { live: { type: 'boolean' }, json: { type: 'boolean' } });
    const scan = scanLeases({ procRoot: procRoot() });
    const leases = scan.leases.filter((l) => !values.live || l.live);
    if (values.json) {
      printJson(
        leases.map(({ ino: _ino, text: _text, file: _file, ...l }) => {
          const user = userName(l.uid);
          return user === undefined ? l : { ...l, user };
        }),
      );
    } else if (leases.length === 0) {
      process.stdout.write(`no leases (${scan.dir.path})\n`);
    } else {
      const rows = leaseRows(leases).map(({ ports, lease: l, count }) => [ports, l.state, cleanText(userName(l.uid) ?? String(l.uid)), leaseOwnerText(l), `${cleanText(l.name ?? '')}${count > 1 ? `${l.name ? ' ' : ''}(${count} ports)` : ''}`]);
      const head = ['PORT', 'STATE', 'USER', 'OWNER', 'NAME'];
      const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
      const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
      process.stdout.write([line(head), ...rows.map(line)].join('\n') + '\n');
    }
    for (const note of leaseNotes(scan)) process.stderr.write(`berth: ${note}\n`);
    return 0;
  },
};
