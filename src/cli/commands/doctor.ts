import { cgroupUnavailable } from '../../host/cgroup.js';
import { readHostMap } from '../../host/read-host.js';
import { defaultLayout } from '../../layout/default-layout.js';
import { loadLayout } from '../../layout/parse.js';
import { wellKnownFindings } from '../../layout/check-well-known.js';
import { collectReport } from '../../report/collect.js';
import { renderJobSummary, slurmJobReport } from '../../slurm/job-summary.js';
import { parseCommandArgs, type Command } from '../command.js';
import { procRoot } from '../env.js';
import { readLeasesForReport } from '../leases-view.js';
import { emitReport } from '../report-output.js';
import { parsePathArg, parseRange } from '../values.js';

const help = `Usage: berth doctor [--layout FILE] [--range LO-HI]… [--html FILE] [--json]

Audit this host (network namespace) and a layout: is every band above the unprivileged
start, clear of the other bands, and outside the unreserved ephemeral range? Each finding
says what to do: the exact 'sysctl -w net.ipv4.ip_local_reserved_ports=…' line that makes a
band safe (merged with the ports already reserved), or a band range of the same size that
lies outside the ephemeral range. A band that contains ports common services take by
default (Ray 6379/8265, vLLM 8000, torch.distributed 29500, Jupyter 8888, …) gets a note.

Without --layout the built-in default layout is checked: one band "default", the largest
run of ports above the unprivileged start and outside the unreserved ephemeral range; it
never hands out the ports common services take by default (the list is in docs/stack.md).

Options:
  --layout FILE   layout file (YAML or JSON): bands: { NAME: { range: LO-HI, window: N } }
  --range LO-HI   also show the sockets of this range (repeatable)
  --html FILE     also write a self-contained HTML picture of the port space
  --json          the full report as JSON (the same data the HTML embeds)

It also says whether berth can keep each service in a cgroup of its own here (process
tracking), and what escapes its stop when it cannot.

Inside a Slurm job it also reports the job: its GPUs, the instance --instance gpu and
--instance auto pick, the ports of --source resv, and the window of each windowed band that
each GPU of the job takes (an error when a GPU's window lies outside its band).

Examples:
  berth doctor
  srun --gres=gpu:2 berth doctor --layout layout.yaml   # the job's windows and GPUs
  berth doctor --layout examples/layouts/rl-framework.yaml
  berth doctor --layout layout.yaml --html port-space.html

Exit codes: 0 no errors (warnings may be shown); 1 errors found; 65 the layout cannot be
read or is invalid (file:line and band named); 74 cannot write the HTML file.`;

/** Whether each service gets a cgroup of its own here (docs/run.md): not a finding, since no layout change fixes it. */
function processTracking(): { cgroup: boolean; message: string } {
  const why = process.env.BERTH_CGROUP === 'off' ? 'BERTH_CGROUP=off' : cgroupUnavailable();
  if (why === undefined)
    return {
      cgroup: true,
      message:
        'process tracking: each service runs in a cgroup of its own; every process it starts is stopped with it (daemons that call setsid, clear their ' +
          'environment and double-fork included)',
    };
  return {
    cgroup: false,
    message: `process tracking: no cgroup per service (${why}): a daemon that calls setsid, clears its environment (env -i) and double-forks before berth ` +
      `next looks is not stopped with its service, nor by the watchdog; run berth as root, or in a delegated cgroup subtree, to close this (docs/run.md, ` +
        `"The process tree")`,
  };
}

export const doctorCommand: Command = {
  help,
  async run(argv) {
    const { values } = parseCommandArgs('doctor', argv, {
      layout: { type: 'string' },
      range: { type: 'string', multiple: true },
      html: { type: 'string' },
      json: { type: 'boolean' },
    });
    const root = procRoot();
    const host = readHostMap({ procRoot: root });
    const layout = values.layout !== undefined ? loadLayout(values.layout) : defaultLayout(host);
    const job = slurmJobReport(layout);
    const report = collectReport({
      kind: 'doctor',
      procRoot: root,
      host,
      layout,
      ranges: (values.range ?? []).map((r) => parseRange('doctor', '--range', r)),
      leases: readLeasesForReport(),
      extraFindings: [...wellKnownFindings(layout), ...job.findings],
    });
    // The job rides along in --json (and the HTML's embedded data) as an extra "slurm" key.
    if (job.summary) Object.assign(report, { slurm: job.summary });
    const tracking = processTracking();
    Object.assign(report, { processTracking: tracking });
    emitReport(report, { json: values.json === true, ...(values.html !== undefined ? { html: parsePathArg('doctor', '--html', values.html) } : {}) });
    if (job.summary && values.json !== true) process.stdout.write('\n' + renderJobSummary(job.summary));
    if (values.json !== true) process.stdout.write(`\n${tracking.message}\n`);
    return report.summary.errors > 0 ? 1 : 0;
  },
};
