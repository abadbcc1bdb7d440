import { fstatSync, readdirSync, readFileSync, readlinkSync, writeSync } from 'node:fs';
import { usage } from './command.js';

/*
 * `--events-fd N` (run, up): one JSON object per line on a descriptor the caller opened, which
 * no service output reaches, so a service cannot print text that passes for berth's.
 * main.ts checks it and writes the closing object ("exit" or "error"), the command the ones
 * before; they are separate bundles, so both find the number in the arguments.
 */

/** The --events-fd value among a command's own arguments (those before `--`), as given. */
export function eventsFdArg(argv: readonly string[]): string | undefined {
  const dd = argv.indexOf('--');
  const own = dd < 0 ? argv : argv.slice(0, dd);
  let value: string | undefined;
  for (let i = 0; i < own.length; i++) {
    const a = own[i]!;
    if (a === '--events-fd') value = own[++i];
    else if (a.startsWith('--events-fd=')) value = a.slice('--events-fd='.length);
  }
  return value;
}

/** The number of a well-formed value (1 or more), else undefined. */
export function eventsFdNumber(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,9}$/.test(value)) return undefined;
  const fd = Number(value);
  return fd >= 1 ? fd : undefined;
}

/**
 * The channel of `run`/`up` arguments, or a usage error. Node's own descriptors (epoll, eventfd,
 * its signal pipes, both ends held) are open too and JSON there would break Node: only a
 * writable file, device, socket or a pipe of which berth holds just this end is taken.
 */
export function checkEventsFd(command: string, argv: readonly string[], proc = '/proc'): number | undefined {
  const value = eventsFdArg(argv);
  if (value === undefined) return undefined;
  const fd = eventsFdNumber(value);
  if (fd === undefined)
    throw usage(command, `--events-fd ${JSON.stringify(value)}: give an open file descriptor number, 1 or more (e.g. --events-fd 3 with 3>events.jsonl)`);
  const refuse = (why: string) =>
    usage(command, `--events-fd ${fd}: ${why}; open it for writing and give it to berth (e.g. 3>events.jsonl in a shell, Python's pass_fds)`);
  try {
    fstatSync(fd);
  } catch {
    throw refuse(`file descriptor ${fd} is not open in berth`);
  }
  let target: string;
  let flags: number;
  let others: string[];
  try {
    target = readlinkSync(`${proc}/self/fd/${fd}`);
    flags = parseInt(/^flags:\s*([0-7]+)/m.exec(readFileSync(`${proc}/self/fdinfo/${fd}`, 'utf8'))?.[1] ?? '', 8);
    others = readdirSync(`${proc}/self/fd`).filter((n) => Number(n) !== fd);
  } catch {
    return fd; // no /proc: taken as given
  }
  if ((flags & 3) === 0) throw refuse(`file descriptor ${fd} is open for reading only`);
  if (target.startsWith('anon_inode:')) throw refuse(`file descriptor ${fd} is not one the caller gave berth (${target})`);
  if (target.startsWith('pipe:') && others.some((n) => linkOf(`${proc}/self/fd/${n}`) === target)) {
    throw refuse(`file descriptor ${fd} is not one the caller gave berth (berth holds both ends of ${target})`);
  }
  return fd;
}

function linkOf(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}

const gone = new Set<number>();

/**
 * One object, one line, written whole before berth goes on (a reader waiting for "ready" gets it
 * first). A reader gone (EPIPE) or a closed fd ends the channel, never berth; a full pipe is waited on.
 */
export function sendEvent(fd: number | undefined, obj: Record<string, unknown>): void {
  if (fd === undefined || gone.has(fd)) return;
  let buf = Buffer.from(JSON.stringify(obj) + '\n');
  while (buf.length > 0) {
    try {
      buf = buf.subarray(writeSync(fd, buf));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EAGAIN') {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
        continue;
      }
      gone.add(fd);
      return;
    }
  }
}
