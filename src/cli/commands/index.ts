/*
 * cli/commands/: one module per command of berth (port, run, up, leases, release, doctor,
 * inspect) and this table of them. Each command's module is loaded only when it runs: the
 * bundle is split per command so `berth port` does not parse the YAML, HTML or launch code.
 * The names and summaries are here so the top-level help needs no module at all.
 * May import: the rest of src/cli (command, values, env, signals, source, output helpers) and
 * every folder below it (src/stack, src/launch, src/source, src/allocate, src/report,
 * src/layout, src/slurm, src/host, src/util, src/errors); only cli/main.ts and cli/sea-snapshot.ts import it.
 */
import type { Command } from '../command.js';

export interface CommandEntry {
  name: string;
  summary: string;
  load(): Promise<Command>;
}

export const commands: CommandEntry[] = [
  { name: 'inspect', summary: 'show host port ranges and who holds the asked ports', load: async () => (await import('./inspect.js')).inspectCommand },
  { name: 'doctor', summary: 'audit host port ranges and a layout; say exactly what to fix', load: async () => (await import('./doctor.js')).doctorCommand },
  { name: 'port', summary: 'lease free ports (race-free across processes)', load: async () => (await import('./port.js')).portCommand },
  { name: 'release', summary: 'end port leases', load: async () => (await import('./release.js')).releaseCommand },
  { name: 'leases', summary: 'list port leases with owners and liveness', load: async () => (await import('./leases.js')).leasesCommand },
  { name: 'run', summary: 'start a service on a held port, wait until it is ready, supervise it', load: async () => (await import('./run.js')).runCommand },
  {
    name: 'up',
    summary: 'start a stack of services in dependency order; tear it down on failure or Ctrl-C',
    load: async () => (await import('./up.js')).upCommand,
  },
];
