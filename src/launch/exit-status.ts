import { constants as osConstants } from 'node:os';

export function signalNumber(sig: NodeJS.Signals): number {
  return (osConstants.signals as Record<string, number>)[sig] ?? 0;
}

/** Shell-style status: the exit code, or 128+N for signal N. */
export function exitStatus(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return signal !== null ? 128 + signalNumber(signal) : 1;
}
