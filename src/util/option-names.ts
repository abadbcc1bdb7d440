import { BerthError, EXIT } from '../errors.js';
import { parseDuration } from './duration.js';

/** A duration as the CLI writes it ('500ms', '10s', '5m'; a bare number in a string is seconds) or a number of ms. */
export type Duration = string | number;

/** Milliseconds of a Duration option; BerthError 64 naming the option when it is not one. */
export function durationMs(name: string, value: Duration): number {
  const ms = typeof value === 'number' ? value : parseDuration(value);
  if (ms === undefined || !Number.isFinite(ms) || ms < 0)
    throw new BerthError(EXIT.USAGE, `${name} ${JSON.stringify(value)}: expected a duration like 500ms, 10s, 5m (or a number of milliseconds)`);
  return ms;
}

/** One value of an option with the CLI's name and the library's older one (owner, ownerPid): either, or both when they agree. */
export function eitherName<T>(cliName: string, cliValue: T | undefined, libName: string, libValue: T | undefined): T | undefined {
  if (cliValue !== undefined && libValue !== undefined && cliValue !== libValue) {
    throw new BerthError(EXIT.USAGE, `${cliName} and ${libName} are the same option and disagree (${String(cliValue)} vs ${String(libValue)}); give one`);
  }
  return cliValue ?? libValue;
}
