/*
 * source/: which ports a caller may use. SOURCE options (the README's Commands: a port, a range, a
 * layout's band or one instance's window of it, `instance: auto|gpu` from Slurm's task or
 * GPUs, `source: 'resv'` from srun's reservation) become a PortSource here, and the built-in
 * default band is asked for here once for the CLI and the library (layout/default-band.ts). reserve() and
 * reserveNamedSet() are the allocator's entry points with SOURCE options resolved.
 * May import: src/allocate, src/layout, src/slurm, src/host, src/util, src/errors.
 */
export type { ReserveOptions, ResolveSourceContext, SourceOptions } from './options.js';
export { hasSourceOptions } from './options.js';
export { resolvePortSource } from './resolve.js';
export { reserve, reserveNamedSet } from './reserve.js';
