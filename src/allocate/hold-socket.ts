import dgram from 'node:dgram';
import net from 'node:net';
import { BerthError, EXIT } from '../errors.js';
import { tryRead } from '../host/proc-read.js';

/*
 * A hold is a listening socket on the wildcard address: it conflicts with every other bind of the
 * port. libuv sets SO_REUSEADDR, so a hold would not notice a TIME_WAIT: the planner's table check does.
 */

export interface HoldError extends Error {
  code: string;
  port: number;
  address: string;
}

function holdError(e: unknown, port: number, address: string): HoldError {
  const err = (e instanceof Error ? e : new Error(String(e))) as HoldError;
  err.code = (e as NodeJS.ErrnoException).code ?? 'UNKNOWN';
  err.port = port;
  err.address = address;
  return err;
}

/**
 * host undefined: the dual-stack wildcard. Node binds '::' with IPV6_V6ONLY cleared (whatever
 * net.ipv6.bindv6only says), falling back to '0.0.0.0' only where IPv6 sockets fail at once
 * (EADDRINUSE comes from listen(), so a taken port never falls back). Naming '::' would go
 * through dns.lookup(), costing `berth port` about 5 ms at startup for the same socket.
 */
function listenOnce(port: number, host: string | undefined, backlog = 16): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    // A connection to a hold is reset, not closed: a close would leave a TIME_WAIT on the
    // port, which blocks a service that binds without SO_REUSEADDR.
    const server = net.createServer({ pauseOnConnect: true }, (sock) => sock.resetAndDestroy());
    const onError = (e: Error) => {
      server.close();
      reject(holdError(e, port, host ?? '::'));
    };
    server.once('error', onError);
    // exclusive: never share the handle with cluster workers.
    const opts: net.ListenOptions = host === undefined ? { port, exclusive: true, backlog } : { port, host, ipv6Only: false, exclusive: true, backlog };
    server.listen(opts, () => {
      server.off('error', onError);
      server.on('error', () => {}); // a held socket has no later errors worth crashing for
      resolve(server);
    });
  });
}

/** Listen on `port` on '::' (dual-stack) when IPv6 is on, else '0.0.0.0'. Rejects with a HoldError (EADDRINUSE, EACCES, …). */
export async function holdPort(port: number, ipv6: boolean, serveAt?: string): Promise<net.Server> {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw holdError(Object.assign(new Error(`cannot hold port ${port}: not a port 1-65535`), { code: 'EINVAL' }), port, '');
  }
  if (serveAt !== undefined) return listenOnce(port, servingAddress(serveAt), listenBacklog());
  return listenOnce(port, ipv6 ? undefined : '0.0.0.0');
}

/*
 * fd handoff (`serveAt`): the hold is bound at once to the service's --bind address (a [::] hold
 * would serve every interface), not re-bound at spawn, where anything may bind the port in the
 * gap. The lease keeps cooperating allocators off what the narrower hold does not refuse.
 */

/** The literal to bind: brackets dropped; "0.0.0.0" stays IPv4-only, "::" is dual-stack. */
function servingAddress(text: string): string {
  const t = text.trim();
  return t.startsWith('[') && t.endsWith(']') ? t.slice(1, -1) : t;
}

let somaxconn: number | undefined;

/** net.core.somaxconn: a socket handed over keeps its backlog (nginx given it never calls listen() again). */
export function listenBacklog(): number {
  if (somaxconn === undefined) {
    const n = Number(tryRead('/proc/sys/net/core/somaxconn', 'latin1')?.trim()); // NaN without /proc: the default below
    somaxconn = Number.isInteger(n) && n > 0 ? n : 4096;
  }
  return somaxconn;
}

/** A bind failure no other port would avoid (address not this host's, family off) as a usage error; else undefined. */
export function addressFailure(e: unknown, address: string): BerthError | undefined {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'EADDRNOTAVAIL') {
    return new BerthError(
      EXIT.USAGE,
      `cannot listen on ${address}: no interface of this host has that address (EADDRNOTAVAIL); give --bind / host: an address of this host, ` +
        `127.0.0.1, ::1, 0.0.0.0 or ::`,
      { address, code },
    );
  }
  if (code === 'EAFNOSUPPORT' || code === 'EPROTONOSUPPORT') {
    return new BerthError(EXIT.USAGE, `cannot listen on ${address}: this host has that address family turned off (${code}); give an address of the ` +
      `other family`, { address, code });
  }
  return undefined;
}

/** The UDP side of a port (`--udp`), where the TCP hold is, without SO_REUSEADDR: EADDRINUSE while anything has it. Rejects with a HoldError. */
export function holdUdp(port: number, ipv6: boolean, serveAt?: string): Promise<dgram.Socket> {
  const address = serveAt !== undefined ? servingAddress(serveAt) : ipv6 ? '::' : '0.0.0.0';
  const type = address.includes(':') ? 'udp6' : 'udp4';
  return new Promise((resolve, reject) => {
    let sock: dgram.Socket;
    try {
      sock = dgram.createSocket(type === 'udp6' ? { type, ipv6Only: false } : { type });
    } catch (e) {
      reject(holdError(e, port, address));
      return;
    }
    const onError = (e: Error) => {
      try {
        sock.close();
      } catch {
        // never bound
      }
      reject(holdError(e, port, address));
    };
    sock.once('error', onError);
    sock.bind({ port, address, exclusive: true }, () => {
      sock.off('error', onError);
      sock.on('error', () => {}); // nothing is read from it; no later error matters
      sock.on('message', () => {}); // dropped: the service is not there yet
      resolve(sock);
    });
  });
}

export function closeUdp(sock: dgram.Socket): Promise<void> {
  return new Promise((resolve) => {
    try {
      sock.close(() => resolve());
    } catch {
      resolve(); // already closed
    }
  });
}

/** The listening socket's file descriptor (for handoff), undefined once closed. */
export function serverFd(server: net.Server): number | undefined {
  // Not public API, but stable for years and the only way to reach the fd of a listener.
  const handle = (server as unknown as { _handle?: { fd?: unknown } | null })._handle;
  const fd = handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : undefined;
}

export function closeServer(server: net.Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
  });
}
