import { BerthError, EXIT } from '../errors.js';
import { commands } from './commands/index.js';
import { systemErrorAsBerth } from '../util/system-error.js';
import { guardStdio } from '../util/closed-output.js';
import { armEarlySignals } from './early-signals.js';
import { checkEventsFd, sendEvent } from './events-fd.js';

const VERSION = '0.1.0';

function topHelp(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'berth — race-free TCP ports for the services of one job',
    '',
    'Usage: berth <command> [options]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    "Run 'berth <command> --help' for a command's options and examples.",
    '',
    'Exit codes: 0 ok; 1 doctor found errors; 64 usage; 65 invalid layout/stack/input;',
    '69 no usable port; 70 service failed before ready; 74 cannot write state/logs; 75 readiness deadline passed.',
  ].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(topHelp() + '\n');
    return name === undefined ? EXIT.USAGE : EXIT.OK;
  }
  if (name === '--version' || name === '-V') {
    process.stdout.write(`berth ${VERSION}\n`);
    return EXIT.OK;
  }
  const entry = commands.find((c) => c.name === name);
  if (!entry) throw new BerthError(EXIT.USAGE, `unknown command ${JSON.stringify(name)}\n\n${topHelp()}`);
  // Before the command's bundle loads: a signal from here on is an orderly stop (early-signals.ts).
  if (name === 'run' || name === 'up' || name === 'port') armEarlySignals();
  if (name === 'run' || name === 'up') events = checkEventsFd(name, rest);
  const cmd = await entry.load();
  if (rest.includes('--help') || rest.includes('-h')) {
    const dd = rest.indexOf('--');
    const helpAt = Math.max(rest.indexOf('--help'), rest.indexOf('-h'));
    if (dd < 0 || helpAt < dd) {
      process.stdout.write(cmd.help.trimEnd() + '\n');
      return EXIT.OK;
    }
  }
  return cmd.run(rest);
}

// A BerthError by shape (an Error with an integer exitCode): each command's bundle has its own copy of the
// class, so `instanceof` misses them, and subclasses rename themselves.
function isBerthError(e: unknown): e is BerthError {
  return e instanceof Error && Number.isInteger((e as { exitCode?: unknown }).exitCode);
}

// `berth inspect | head -1`: a reader that went away ends berth's output, never berth (every command).
guardStdio();

// `run` and `up --events-fd N`: the machine channel (events-fd.ts), checked by main() first.
const argv = process.argv.slice(2);
let events: number | undefined;

main(argv).then(
  (code) => {
    sendEvent(events, { event: 'exit', exitCode: code });
    process.exitCode = code;
  },
  (thrown: unknown) => {
    // A file-system failure on a path is the user's to fix (74), never a stack trace.
    const e = systemErrorAsBerth(thrown) ?? thrown;
    if (isBerthError(e)) {
      process.stderr.write(`berth: ${e.message}\n`);
      const error = { exitCode: e.exitCode, message: e.message, ...(e.details ?? {}) };
      if (process.argv.includes('--json')) process.stdout.write(JSON.stringify({ error }, null, 2) + '\n');
      sendEvent(events, { event: 'error', error });
      process.exitCode = e.exitCode;
    } else {
      process.stderr.write(`berth: internal error (a bug in berth; please report it with this text):\n${(e as Error)?.stack ?? String(e)}\n`);
      sendEvent(events, {
        event: 'error',
        error: { exitCode: EXIT.SOFTWARE, message: `internal error (a bug in berth): ${(e as Error)?.message ?? String(e)}` },
      });
      process.exitCode = EXIT.SOFTWARE;
    }
  },
);
