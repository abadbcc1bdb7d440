/*
 * cli/: the `berth` command. main.ts is dist/berth.cjs's entry: it reads the command name and
 * loads that command's own bundle (commands/, one file per command, bundle-loader.ts), so
 * `berth port` parses no YAML. Beside it what every command shares: argument values,
 * SOURCE flags (source.ts), signals (early-signals.ts, signals.ts), stdout, --events-fd.
 * May import: every folder below it (src/stack, src/launch, src/report, src/allocate,
 * src/layout, src/slurm, src/host, src/util, src/errors). Nothing imports src/cli.
 */
export {};
