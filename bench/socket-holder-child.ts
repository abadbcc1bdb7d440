/**
 * Holds one side of many loopback TCP connections for bench/socket-table-child.ts. Two of
 * these (server side, client side) keep the socket count under each process's open-file
 * limit. argv[2]: JSON {role:'server'} or {role:'clients', v4Port, v6Port?, count}.
 * Prints one JSON line when set up, then holds everything until stdin closes, then resets it all.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

interface Cfg {
  role: 'server' | 'clients';
  v4Port?: number;
  v6Port?: number;
  count?: number;
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as Cfg;
const held: Socket[] = [];

function keep(s: Socket): void {
  s.pause();
  s.on('error', () => {});
  held.push(s);
}

function listen(host: string): Promise<Server | undefined> {
  return new Promise((resolve) => {
    const srv = createServer({ pauseOnConnect: true }, keep);
    srv.once('error', () => resolve(undefined)); // no IPv6 in this namespace
    srv.listen({ host, port: 0, backlog: 4096 }, () => resolve(srv));
  });
}

function open(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = connect({ host, port }, () => {
      keep(s);
      resolve();
    });
    s.once('error', reject);
  });
}

if (cfg.role === 'server') {
  const v4 = await listen('127.0.0.1');
  const v6 = await listen('::1');
  const port = (s: Server | undefined) => (s ? (s.address() as { port: number }).port : undefined);
  process.stdout.write(JSON.stringify({ v4Port: port(v4), v6Port: port(v6) }) + '\n');
} else {
  const count = cfg.count ?? 0;
  const targets: [string, number][] = [['127.0.0.1', cfg.v4Port!]];
  if (cfg.v6Port !== undefined) targets.push(['::1', cfg.v6Port]);
  // Batches keep the listen backlog from overflowing (a dropped SYN costs a 1 s retry).
  const batch = 200;
  for (let i = 0; i < count; i += batch) {
    const wave: Promise<void>[] = [];
    for (let k = i; k < Math.min(count, i + batch); k++) {
      const [host, port] = targets[k % targets.length]!;
      wave.push(open(host, port));
    }
    await Promise.all(wave);
  }
  process.stdout.write(JSON.stringify({ opened: held.length }) + '\n');
}
// Closed with a reset, so no TIME_WAIT is left behind in the namespace when the load is taken away.
const drop = () => {
  for (const s of held) s.resetAndDestroy();
  setImmediate(() => process.exit(0));
};
process.stdin.resume();
process.stdin.on('end', drop);
process.stdin.on('error', drop);
