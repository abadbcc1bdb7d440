import type { PortRange } from '../host/host-map.js';
import { parseDuration, timerProblem, type TimerRule } from '../util/duration.js';
import { usage } from './command.js';

export function parsePort(command: string, flag: string, text: string): number {
  if (!/^\d+$/.test(text)) throw usage(command, `${flag} ${JSON.stringify(text)}: expected a port number 1-65535`);
  const p = Number(text);
  if (p < 1 || p > 65535) throw usage(command, `${flag} ${text}: ports are 1-65535`);
  return p;
}

export function parseRange(command: string, flag: string, text: string): PortRange {
  const m = /^(\d+)-(\d+)$/.exec(text.trim());
  if (!m) throw usage(command, `${flag} ${JSON.stringify(text)}: expected LO-HI, e.g. 20000-20999`);
  const lo = Number(m[1]);
  const hi = Number(m[2]);
  if (lo < 1 || hi > 65535 || lo > hi) throw usage(command, `${flag} ${text}: need 1 ≤ LO ≤ HI ≤ 65535`);
  return { lo, hi };
}

/** A whole number ≥ min; at most `max` (default: Number.MAX_SAFE_INTEGER, so a count never rounds). */
export function parseCount(command: string, flag: string, text: string, min = 1, max = Number.MAX_SAFE_INTEGER): number {
  if (!/^\d+$/.test(text) || Number(text) < min) throw usage(command, `${flag} ${JSON.stringify(text)}: expected an integer ≥ ${min}`);
  if (Number(text) > max)
    throw usage(
      command,
      `${flag} ${text}: at most ${max}${max === MAX_PORTS ? ' (there are no more TCP ports)' : max === MAX_PID ? ' (the largest pid Linux gives)' : ''}`,
    );
  return Number(text);
}

/** How many TCP ports there are (1-65535): a count or a block beyond it is a usage error, not "no usable port". */
export const MAX_PORTS = 65535;

/** The kernel's largest pid (PID_MAX_LIMIT on 64-bit): an --owner beyond it names no process. */
export const MAX_PID = 4194304;

/** A duration; with `timer` (DEADLINE or GRACE of util/duration.ts), one berth waits out with a timer. */
export function parseDurationArg(command: string, flag: string, text: string, timer?: TimerRule): number {
  const ms = parseDuration(text);
  if (ms === undefined) throw usage(command, `${flag} ${JSON.stringify(text)}: expected a duration like 500ms, 10s, 5m`);
  const problem = timer === undefined ? undefined : timerProblem(ms, timer);
  if (problem !== undefined) throw usage(command, `${flag} ${text} ${problem}`);
  return ms;
}

/** A path flag's value: an empty one would mean the current directory (or nothing) by accident. */
export function parsePathArg(command: string, flag: string, text: string): string {
  if (text === '') throw usage(command, `${flag} is empty: give a path`);
  return text;
}
