import net from 'node:net';

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

function listenOnce(port: number, host: string): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    // Nothing is served on a hold yet: a connection that lands here is refused with a
    // reset rather than left hanging. A reset, not a close: closing first would leave a
    // TIME_WAIT on the port, which blocks a service that binds without SO_REUSEADDR.
    const server = net.createServer({ pauseOnConnect: true }, (sock) => sock.resetAndDestroy());
    const onError = (e: Error) => {
      server.close();
      reject(holdError(e, port, host));
    };
    server.once('error', onError);
    // ipv6Only false: libuv then clears IPV6_V6ONLY explicitly, so '::' is dual-stack even
    // where net.ipv6.bindv6only=1. exclusive: never share the handle with cluster workers.
    server.listen({ port, host, ipv6Only: false, exclusive: true, backlog: 16 }, () => {
      server.off('error', onError);
      server.on('error', () => {}); // a held socket has no later errors worth crashing for
      resolve(server);
    });
  });
}

/**
 * Listen on `port` on '::' (dual-stack) when IPv6 is on, else on '0.0.0.0'. Rejects with a
 * HoldError carrying `code` (EADDRINUSE, EACCES, …). Never port 0.
 */
export async function holdPort(port: number, ipv6: boolean): Promise<net.Server> {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw holdError(Object.assign(new Error(`cannot hold port ${port}: not a port 1-65535`), { code: 'EINVAL' }), port, '');
  }
  if (ipv6) {
    try {
      return await listenOnce(port, '::');
    } catch (e) {
      // IPv6 sockets unsupported after all (module present, family disabled): hold on IPv4.
      if ((e as HoldError).code !== 'EAFNOSUPPORT') throw e;
    }
  }
  return listenOnce(port, '0.0.0.0');
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
