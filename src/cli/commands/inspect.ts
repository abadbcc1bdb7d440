import { readHostMap } from '../../host/read-host.js';
import type { PortRange } from '../../host/host-map.js';
import { collectReport } from '../../report/collect.js';
import { parseCommandArgs, type Command } from '../command.js';
import { procRoot } from '../env.js';
import { readLeasesForReport } from '../leases-view.js';
import { emitReport } from '../report-output.js';
import { parsePathArg, parsePort, parseRange } from '../values.js';

const help = `Usage: berth inspect [--port P]… [--range LO-HI]… [--html FILE] [--json]

The host port map of this network namespace: the ephemeral range, reserved ports, the
unprivileged start, and every socket (TCP and UDP, any state, IPv4 and IPv6) on the asked
ports with its owner (pid and command where permissions allow, else uid), and berth's
leases. UDP sockets show as UDP UNCONN (bound) or UDP ESTAB (connected). With no --port or
--range: every listening socket (TCP LISTEN, and unconnected UDP).

Options:
  --port P        a port to look at (repeatable)
  --range LO-HI   a range to look at (repeatable)
  --html FILE     also write a self-contained HTML picture
  --json          machine-readable output

Examples:
  berth inspect --port 8000
  berth inspect --range 20000-20999 --json | jq '.sockets[] | {localPort, state, owners}'

Exit codes: 0 ok; 64 usage; 74 cannot read /proc or write the HTML file.`;

export const inspectCommand: Command = {
  help,
  async run(argv) {
    const { values } = parseCommandArgs('inspect', argv, {
      port: { type: 'string', multiple: true },
      range: { type: 'string', multiple: true },
      html: { type: 'string' },
      json: { type: 'boolean' },
    });
    const ranges: PortRange[] = [
      ...(values.port ?? []).map((p) => parsePort('inspect', '--port', p)).map((n) => ({ lo: n, hi: n })),
      ...(values.range ?? []).map((r) => parseRange('inspect', '--range', r)),
    ];
    const root = procRoot();
    const host = readHostMap({ procRoot: root });
    const report = collectReport({ kind: 'inspect', procRoot: root, host, ranges, listeners: true, leases: readLeasesForReport() });
    emitReport(report, { json: values.json === true, ...(values.html !== undefined ? { html: parsePathArg('inspect', '--html', values.html) } : {}) });
    return 0;
  },
};
