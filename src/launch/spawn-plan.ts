import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { Handoff } from './launch-api.js';

/*
 * What exactly is exec'd: the user's argv (no shell), `{port}`/`{host}` filled in, and for fd handoff
 * an exec shim in front, since Node can neither clear O_NONBLOCK on a handed socket nor know the
 * child's pid before exec: perl (Debian's essential perl-base) makes fds 3 … 2+LISTEN_FDS blocking
 * and inheritable, as systemd hands sockets over, sets LISTEN_PID to its own pid and execs the command.
 */

export const PERL_SHIM = [
  'use Fcntl;',
  // The handles stay in @h until exec: a handle destroyed at the end of the loop would close its fd.
  'my @h;',
  'for my $n (3 .. 2 + ($ENV{LISTEN_FDS} || 1)) {',
  'open(my $s, "+<&=", $n) or die "berth fd shim: fd $n: $!\\n";',
  'my $fl = fcntl($s, F_GETFL, 0) or die "berth fd shim: F_GETFL: $!\\n";',
  'fcntl($s, F_SETFL, $fl & ~O_NONBLOCK) or die "berth fd shim: F_SETFL: $!\\n";',
  // perl marks descriptors above $^F close-on-exec when it opens them; undo that.
  'fcntl($s, F_SETFD, 0) or die "berth fd shim: F_SETFD: $!\\n";',
  'push @h, $s;',
  '}',
  '$ENV{LISTEN_PID} = $$;',
  'exec { $ARGV[0] } @ARGV;',
  'print STDERR "berth: cannot execute $ARGV[0]: $!\\n"; exit 127;',
].join(' ');

/** Fallback without perl: right pid, but the socket stays non-blocking. */
const SH_SHIM = 'export LISTEN_PID=$$; exec "$0" "$@"';

/** Absolute path of an executable `cmd` (as execvp would find it), undefined when none. */
export function findExecutable(cmd: string, pathEnv: string | undefined, cwd = process.cwd()): string | undefined {
  const ok = (p: string) => {
    try {
      accessSync(p, constants.X_OK);
      return statSync(p).isFile(); // a directory is "executable" (searchable) too; execvp skips it
    } catch {
      return false;
    }
  };
  if (cmd.includes('/')) {
    const p = cmd.startsWith('/') ? cmd : join(cwd, cmd);
    return ok(p) ? p : undefined;
  }
  for (const dir of (pathEnv ?? '/usr/local/bin:/usr/bin:/bin').split(delimiter)) {
    const p = join(dir === '' ? '.' : dir, cmd);
    if (ok(p)) return p;
  }
  return undefined;
}

/** The perl of the fd shim, undefined when there is none. */
export function findPerl(env: NodeJS.ProcessEnv): string | undefined {
  return findExecutable('perl', env.PATH);
}

export function substitute(text: string, vars: Record<string, string>): string {
  let out = text;
  for (const [k, v] of Object.entries(vars)) out = out.split(`{${k}}`).join(v);
  return out;
}

/** sd_listen_fds names: up to 255 printable ASCII characters, no ':'. */
export function fdName(name: string): string {
  const s = name.replace(/[^\x21-\x7e]|:/g, '_').slice(0, 255);
  return s === '' ? 'berth' : s;
}

export interface ChildEnvInput {
  base: NodeJS.ProcessEnv;
  /** Absent for a portless launch: no PORT/BERTH_PORT then. */
  port?: number;
  envName: string;
  name: string;
  runId: string;
  handoff: Handoff;
  bind?: string;
  /** fd handoff of a named set: the names of fds 3, 4, … (LISTEN_FDS is their count). Default: one fd named `name`. */
  fdNames?: readonly string[];
  /** BERTH_PORT_<NAME> and friends of a named set (portSetEnv). */
  portEnv?: Record<string, string>;
}

export function childEnv(i: ChildEnvInput): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...i.base };
  // Never pass on a socket-activation set berth itself may have been given.
  delete env.LISTEN_FDS;
  delete env.LISTEN_PID;
  delete env.LISTEN_FDNAMES;
  if (i.port !== undefined) {
    env[i.envName] = String(i.port);
    env.BERTH_PORT = String(i.port);
  }
  env.BERTH_NAME = i.name;
  // Marks the whole process tree (survives setsid and double fork): see process-tree.ts.
  env.BERTH_RUN_ID = i.runId;
  if (i.bind !== undefined) env.BERTH_HOST = i.bind;
  if (i.portEnv) Object.assign(env, i.portEnv);
  if (i.handoff === 'fd') {
    const names = i.fdNames ?? [i.name];
    env.LISTEN_FDS = String(names.length);
    env.LISTEN_FDNAMES = names.map(fdName).join(':');
  }
  return env;
}

export interface ExecPlan {
  file: string;
  args: string[];
  /** Shown in diagnostics: what the service itself runs as. */
  command: string[];
  warning?: string;
}

export function execPlan(command: readonly string[], handoff: Handoff, perl: string | undefined): ExecPlan {
  const [file, ...args] = command as [string, ...string[]];
  if (handoff === 'release') return { file, args, command: [...command] };
  if (perl !== undefined) return { file: perl, args: ['-e', PERL_SHIM, '--', ...command], command: [...command] };
  return {
    file: '/bin/sh',
    args: ['-c', SH_SHIM, ...command],
    command: [...command],
    warning: 'perl not found: the handed sockets (fd 3, …) stay in non-blocking mode (servers that expect a blocking socket may spin or fail on accept)',
  };
}
