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

/**
 * host undefined: the dual-stack wildcard. Node then binds '::' with IPV6_V6ONLY cleared
 * (libuv sets or clears it explicitly on every IPv6 bind; no ipv6Only flag means cleared,
 * whatever net.ipv6.bindv6only says), and binds '0.0.0.0' instead only when the IPv6 socket
 * cannot be made or bound at once (EAFNOSUPPORT where IPv6 is off; EADDRINUSE is reported
 * by listen(), so a taken port never falls back). Naming '::' instead would send the
 * address through dns.lookup(): loading node:dns and compiling its IPv6 regex costs
 * `berth port` about 5 ms at startup, for the same socket.
 */
function listenOnce(port: number, host: string | undefined): Promise<net.Server> {
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
    const opts: net.ListenOptions = host === undefined ? { port, exclusive: true, backlog: 16 } : { port, host, ipv6Only: false, exclusive: true, backlog: 16 };
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
export async function holdPort(port: number, ipv6: boolean): Promise<net.Server> {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw holdError(Object.assign(new Error(`cannot hold port ${port}: not a port 1-65535`), { code: 'EINVAL' }), port, '');
  }
  // Without IPv6 (no tcp6 table), '0.0.0.0' by name as before.
  return listenOnce(port, ipv6 ? undefined : '0.0.0.0');
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
