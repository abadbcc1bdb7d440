import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { BerthError, EXIT } from '../errors.js';

/*
 * A hold is a listening socket on the wildcard address: the strictest claim on a port
 * (it conflicts with every other bind of the port, any address, both families when
 * dual-stack). libuv sets SO_REUSEADDR, so a hold alone would not notice a TIME_WAIT
 * socket on the port; the planner's socket-table check covers that.
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
 * host undefined: the dual-stack wildcard. Node then binds '::' with IPV6_V6ONLY cleared
 * (libuv sets or clears it explicitly on every IPv6 bind; no ipv6Only flag means cleared,
 * whatever net.ipv6.bindv6only says), and binds '0.0.0.0' instead only when the IPv6 socket
 * cannot be made or bound at once (EAFNOSUPPORT where IPv6 is off; EADDRINUSE is reported
 * by listen(), so a taken port never falls back). Naming '::' instead would send the
 * address through dns.lookup(): loading node:dns and compiling its IPv6 regex costs
 * `berth port` about 5 ms at startup, for the same socket.
 */
function listenOnce(port: number, host: string | undefined, backlog = 16): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    // Nothing is served on a hold yet: a connection that lands here is refused with a
    // reset rather than left hanging. A reset, not a close: closing first would leave a
    // TIME_WAIT on the port, which blocks a service that binds without SO_REUSEADDR.
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

/**
 * Listen on `port` on '::' (dual-stack) when IPv6 is on, else on '0.0.0.0' (also when IPv6
 * sockets turn out to be unsupported after all). Rejects with a
 * HoldError carrying `code` (EADDRINUSE, EACCES, …). Never port 0.
 */
export async function holdPort(port: number, ipv6: boolean, serveAt?: string): Promise<net.Server> {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw holdError(Object.assign(new Error(`cannot hold port ${port}: not a port 1-65535`), { code: 'EINVAL' }), port, '');
  }
  if (serveAt !== undefined) return listenOnce(port, servingAddress(serveAt), listenBacklog());
  // Without IPv6 (no tcp6 table), '0.0.0.0' by name as before.
  return listenOnce(port, ipv6 ? undefined : '0.0.0.0');
}

/*
 * fd handoff (`serveAt`): the hold is the service's own listening socket from the start, so
 * it is bound to the address the service was asked to listen on, not the wildcard: a hold
 * on [::] handed over as fd 3 would serve every interface although --bind (or `host:`)
 * said 127.0.0.1. It is bound there at once rather than held on the wildcard and re-bound
 * at spawn: a re-bind must close the wildcard first (the two conflict), and in that gap
 * anything may bind the port. A hold on one address claims less than the wildcard (another
 * address's bind of the port is not refused), but nothing berth hands out is lost by it:
 * the lease keeps cooperating allocators off the port, the planner saw no socket on it in
 * any state, and the service's connections arrive on this socket from the first moment.
 */

/** The literal to bind: brackets dropped; "0.0.0.0" stays IPv4-only, "::" is dual-stack. */
function servingAddress(text: string): string {
  const t = text.trim();
  return t.startsWith('[') && t.endsWith(']') ? t.slice(1, -1) : t;
}

let somaxconn: number | undefined;

/**
 * The backlog a server would ask for: the kernel's limit, net.core.somaxconn (per network
 * namespace; 4096 by default since Linux 5.4). A socket handed over keeps the backlog it was
 * made with: nginx given it (NGINX="3;") never calls listen() again.
 */
export function listenBacklog(): number {
  if (somaxconn === undefined) {
    let n = NaN;
    try {
      n = Number(readFileSync('/proc/sys/net/core/somaxconn', 'latin1').trim());
    } catch {
      // no /proc: the default below
    }
    somaxconn = Number.isInteger(n) && n > 0 ? n : 4096;
  }
  return somaxconn;
}

/**
 * A bind failure that no other port would avoid (the address is not this host's, or its
 * family is off) as a usage error naming the address; undefined for a port-level failure.
 */
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

/**
 * The UDP side of a port, for a service that uses both (`udp: true`, `--udp`): a datagram
 * socket bound where the TCP hold is (dual-stack [::] when IPv6 is on, else 0.0.0.0; the
 * service's address with fd handoff). Bound exclusively and without SO_REUSEADDR, so it fails
 * with EADDRINUSE while anything holds the port's UDP side, and nothing binds it meanwhile.
 * Datagrams that reach it before the handoff are dropped with it. Rejects with a HoldError.
 */
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
