import { parseArgs, type ParseArgsConfig } from 'node:util';
import { BerthError, EXIT } from '../errors.js';

export interface Command {
  /** Full --help text, examples included. */
  help: string;
  run(argv: string[]): Promise<number>;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** parseArgs with berth's rules: unknown flags and bad values are usage errors (exit 64). */
export function parseCommandArgs<O extends Options>(command: string, argv: string[], options: O, allowPositionals = false) {
  try {
    return parseArgs({ args: argv, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals, strict: true });
  } catch (e) {
    throw usage(command, (e as Error).message.replace(/\. To specify a positional argument starting with a '-'.*$/s, ''));
  }
}

export function usage(command: string, msg: string): BerthError {
  return new BerthError(EXIT.USAGE, `${command}: ${msg}\nRun 'berth ${command} --help' for usage.`);
}

export function jsonText(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (v instanceof Map ? Object.fromEntries(v) : v), 2) + '\n';
}

export function printJson(value: unknown): void {
  process.stdout.write(jsonText(value));
}
