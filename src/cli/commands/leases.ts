import { parseCommandArgs, printJson, type Command } from '../command.js';
import { leaseDir } from '../../allocate/leases.js';
import { listLeases } from '../../allocate/lease-store.js';
import { procRoot } from '../env.js';
import { leaseOwnerText } from '../leases-view.js';

const help = `Usage: berth leases [--live] [--json]

List berth's leases in this network namespace: port, state (live, expired, owner-gone,
pid-reused), owner pid or expiry, name, Slurm job. Stale leases are listed until the next
allocation or 'berth release' reclaims them.

Options:
  --live   only live leases
  --json   machine-readable output

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
    const dir = leaseDir({ procRoot: procRoot() });
    const leases = listLeases(dir).filter((l) => !values.live || l.live);
    if (values.json) {
      printJson(leases.map(({ ino: _ino, ...l }) => l));
      return 0;
    }
    if (leases.length === 0) {
      process.stdout.write(`no leases (${dir})\n`);
      return 0;
    }
    const rows = leases.map((l) => [String(l.port), l.state, leaseOwnerText(l), l.name ?? '']);
    const head = ['PORT', 'STATE', 'OWNER', 'NAME'];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
    process.stdout.write([line(head), ...rows.map(line)].join('\n') + '\n');
    return 0;
  },
};
