import { durationMs, eitherName, type Duration } from '../util/option-names.js';
import type { LaunchOptions } from './launch-api.js';

/**
 * LaunchOptions with the CLI-named durations (readyTimeout, stopGrace) folded into their
 * *Ms forms. The source is left as given: reserve() resolves it, the default band when there
 * is none, exactly like `berth run`. Throws BerthError 64 for a duration it cannot read.
 */
export function resolveLaunchOptions(o: LaunchOptions): LaunchOptions {
  if (o.readyTimeout === undefined && o.stopGrace === undefined) return o;
  const { readyTimeout, stopGrace, ...out } = o;
  const ms = (name: string, d: Duration | undefined) => (d === undefined ? undefined : durationMs(name, d));
  const ready = eitherName('readyTimeout', ms('readyTimeout', readyTimeout), 'readyTimeoutMs', o.readyTimeoutMs);
  if (ready !== undefined) out.readyTimeoutMs = ready;
  const grace = eitherName('stopGrace', ms('stopGrace', stopGrace), 'stopGraceMs', o.stopGraceMs);
  if (grace !== undefined) out.stopGraceMs = grace;
  return out;
}

/** A CLI flag as the caller names it in messages (LaunchOptions.optionNames): `--ready-timeout`, or a stack's `ready_timeout`. */
export function optionName(o: LaunchOptions, flag: string): string {
  return o.optionNames?.[flag] ?? flag;
}
