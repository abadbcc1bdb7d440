/**
 * Exit codes of the CLI contract (the README's Exit codes, sysexits). Library callers see the
 * same numbers on BerthError.exitCode so a launcher can map failures the same way.
 */
export const EXIT = {
  OK: 0,
  FINDINGS: 1,
  USAGE: 64,
  DATAERR: 65,
  UNAVAILABLE: 69,
  SOFTWARE: 70,
  IOERR: 74,
  TEMPFAIL: 75,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A failure the user can act on: printed as one message, never as a stack trace. */
export class BerthError extends Error {
  readonly exitCode: number;
  /** Extra structured facts for --json output and diagnostics bundles. */
  readonly details?: Record<string, unknown>;
  constructor(exitCode: number, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'BerthError';
    this.exitCode = exitCode;
    if (details !== undefined) this.details = details;
  }
}

