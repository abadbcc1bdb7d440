import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { BerthError, EXIT } from '../errors.js';
import { tryRead } from '../host/proc-read.js';
import { leaseTable, listNames, type LeaseTable } from './lease-table.js';

export { closeServer as closeName } from './hold-socket.js';

/*
 * The lease domain: the network namespace's abstract Unix socket names (lease-protocol.ts). The
 * kernel does all a lease store must: bind() of a taken name fails atomically, /proc/net/unix lists
 * every name whatever the user, container or mount namespace, and a name is gone when the last
 * descriptor of its socket closes, so a lease can neither outlive its holder nor need reclaiming.
 */

/** A bound name: a listening socket nobody is served on (connections are dropped). */
export type NameHold = net.Server;

let knownLimit: string | undefined;

/** Read the descriptor limit for its message now: once it is reached, /proc/self/limits cannot be opened either. */
export function rememberFdLimit(): void {
  knownLimit ??= readFdLimit();
}

function readFdLimit(): string {
  const line = tryRead('/proc/self/limits', 'latin1')?.split('\n').find((l) => l.startsWith('Max open files'));
  const m = line === undefined ? null : /^Max open files\s+(\S+)\s+(\S+)/.exec(line);
  return m ? `soft ${m[1]}, hard ${m[2]}` : 'unknown';
}

export function descriptorError(code: string, what: string): BerthError {
  const msg =
    code === 'EMFILE'
      ? `out of file descriptors while ${what} (EMFILE; RLIMIT_NOFILE ${knownLimit ?? readFdLimit()}): a lease takes one descriptor per port, a held port ` +
        `one more; raise the limit (ulimit -n, or LimitNOFILE= / the job's limits) or lease fewer ports at once`
      : `the system is out of file descriptors while ${what} (ENFILE): raise fs.file-max (sysctl -w fs.file-max=…) or free descriptors elsewhere`;
  return new BerthError(EXIT.IOERR, `${msg}; nothing was leased`, { code });
}

/** Bind `name` (Node pads it to the whole sun_path): undefined when taken; BerthError 74 when it cannot be bound. */
export function bindName(name: string): Promise<NameHold | undefined> {
  return new Promise((resolve, reject) => {
    const server = net.createServer({ pauseOnConnect: true }, (sock) => sock.destroy());
    const onError = (e: NodeJS.ErrnoException) => {
      server.close();
      if (e.code === 'EADDRINUSE') resolve(undefined);
      else if (e.code === 'EMFILE' || e.code === 'ENFILE') reject(descriptorError(e.code, 'binding a lease name'));
      else reject(new BerthError(EXIT.IOERR, `cannot bind the lease name @${name}: ${e.code ?? e.message}`, { code: e.code }));
    };
    server.once('error', onError);
    server.listen({ path: `\0${name}`, backlog: 1, exclusive: true }, () => {
      server.off('error', onError);
      server.on('error', () => {});
      // A lease must not keep its process alive: it ends with it.
      server.unref();
      resolve(server);
    });
  });
}

export function readUnixTable(procRoot = '/proc'): string {
  try {
    return readFileSync(join(procRoot, 'net', 'unix'), 'latin1');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EMFILE' || code === 'ENFILE') throw descriptorError(code, 'reading /proc/net/unix');
    throw new BerthError(EXIT.IOERR, `cannot read ${join(procRoot, 'net', 'unix')} (the lease domain): ${code ?? (e as Error).message}; berth needs ` +
      `/proc mounted`);
  }
}

/** Every lease name of this network namespace, sorted out (lease-table.ts). */
export function readLeaseTable(procRoot = '/proc'): LeaseTable {
  return leaseTable(listNames(readUnixTable(procRoot)));
}
