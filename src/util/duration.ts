/** Durations as the CLI spells them: "500ms", "10s", "5m", "1h"; a bare number is seconds. */
const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export function parseDuration(text: string): number | undefined {
  // Trimmed first: with a \s* on both sides of the optional unit, "1" + many blanks + "x"
  // backtracked in quadratic time (40,000 blanks took 9 s).
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/.exec(text.trim());
  if (!m) return undefined;
  return Math.round(Number(m[1]) * UNITS[m[2] ?? 's']!);
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)}s`;
  return `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`;
}

/** The longest wait berth can time (~596.5h): Node's timers take a signed 32-bit ms count, and a longer one fires at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The limit as the user would write it (whole hours below it). */
export const MAX_TIMER_TEXT = `${Math.floor(MAX_TIMER_MS / UNITS.h!)}h`;

export interface TimerRule {
  /** Whether 0 is allowed (a stop grace of 0 kills at once; a ready timeout of 0 could never be met). */
  zero: boolean;
  /** A bound of its own instead of Node's timer limit (a lease's ttl is timed by its holder, not by berth). */
  max?: { ms: number; text: string; why: string };
}

/** Why `ms` cannot be a timer duration (one rule for the CLI, the stack file and the library), or undefined when it can. */
export function timerProblem(ms: number, rule: TimerRule): string | undefined {
  if (rule.max !== undefined) {
    if (!Number.isFinite(ms) || ms > rule.max.ms) return `is too long: at most ${rule.max.text} (${rule.max.why})`;
  } else if (!Number.isFinite(ms) || ms > MAX_TIMER_MS) return `is longer than berth can time: at most ${MAX_TIMER_TEXT} (about 24.8 days, Node's timer limit)`;
  if (ms < 0 || (ms === 0 && !rule.zero)) return 'must be more than 0';
  return undefined;
}

/** Deadlines: a ready timeout must be 1ms … MAX_TIMER_MS. */
export const DEADLINE: TimerRule = { zero: false };
/** Graces: a stop grace may be 0 (SIGKILL right after SIGTERM) … MAX_TIMER_MS. */
export const GRACE: TimerRule = { zero: true };

/** The longest lease ttl, 366 days: a lease outliving a year is a forgotten one, and now + ttl stays well inside a record's MAX_STAMP_MS. */
export const MAX_TTL_MS = 8784 * UNITS.h!;

/** Lease ttls: 1ms … MAX_TTL_MS. */
export const TTL: TimerRule = { zero: false, max: { ms: MAX_TTL_MS, text: '8784h', why: '366 days: a lease that outlives a year is a forgotten one' } };
