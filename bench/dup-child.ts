/**
 * One allocator process of bench/duplicates.ts: gets one port from the shared range with
 * the allocator under test, then ~50 ms later binds it for real as a service would.
 * Protocol: prints "ready" once loaded, reads the shared start time (ms since epoch) from
 * stdin, waits for it, allocates, binds, prints one JSON result line, then keeps its
 * listener until stdin closes (so later binds of the same port fail, as with services).
 */
import { createServer, type Server } from 'node:net';
import { createInterface } from 'node:readline';
import { loadBerth } from './lib/berth-api.js';

export type AllocatorKind = 'berth' | 'get-port' | 'portfinder' | 'naive';

export interface DupChildConfig {
  kind: AllocatorKind;
  lo: number;
  hi: number;
  lib?: string;
  stateDir?: string;
  bindDelayMs: number;
}

export interface DupChildResult {
  port?: number;
  allocError?: string;
  bindOk: boolean;
  bindError?: string;
  /** start barrier to the port in hand */
  allocMs: number;
  /** how late this process woke after the shared start time */
  lateMs: number;
}

interface Allocation {
  port: number;
  /** Called just before the service binds (berth: close the hold, keep the lease). */
  handOff?: () => Promise<void>;
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as DupChildConfig;

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    // Default host, [::] dual-stack: what `server.listen(port)` in a service does.
    srv.listen({ port }, () => resolve(srv));
  });
}

async function loadAllocator(): Promise<() => Promise<Allocation>> {
  const range = { lo: cfg.lo, hi: cfg.hi };
  switch (cfg.kind) {
    case 'berth': {
      const berth = await loadBerth(cfg.lib!);
      return async () => {
        const r = await berth.reserve({ source: { kind: 'range', range }, count: 1, ttlMs: 120_000, stateDir: cfg.stateDir! });
        return { port: r.ports[0]!, handOff: () => r.unhold() };
      };
    }
    case 'get-port': {
      const { default: getPort, portNumbers } = await import('get-port');
      return async () => ({ port: await getPort({ port: portNumbers(cfg.lo, cfg.hi) }) });
    }
    case 'portfinder': {
      // CommonJS: the bundle puts module.exports on `default`.
      const pf = (await import('portfinder')).default;
      return async () => ({ port: await pf.getPortPromise({ port: cfg.lo, stopPort: cfg.hi }) });
    }
    case 'naive':
      // Check-and-release: the pattern berth exists to replace.
      return async () => {
        for (let p = cfg.lo; p <= cfg.hi; p++) {
          try {
            const s = await listen(p);
            await new Promise((r) => s.close(r));
            return { port: p };
          } catch { /* taken: next */ }
        }
        throw new Error('no free port');
      };
  }
}

const allocate = await loadAllocator();
const lines = createInterface({ input: process.stdin });
const startAt = await new Promise<number>((resolve) => {
  lines.once('line', (l) => resolve(Number(l)));
  process.stdout.write('ready\n');
});
await new Promise((r) => setTimeout(r, Math.max(0, startAt - Date.now())));
const woke = Date.now();
const result: DupChildResult = { bindOk: false, allocMs: 0, lateMs: woke - startAt };
let server: Server | undefined;
try {
  const a = await allocate();
  result.port = a.port;
  result.allocMs = Date.now() - startAt;
  await new Promise((r) => setTimeout(r, cfg.bindDelayMs));
  await a.handOff?.();
  try {
    server = await listen(a.port);
    result.bindOk = true;
  } catch (e) {
    result.bindError = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
  }
} catch (e) {
  result.allocError = (e as Error).message.slice(0, 200);
  result.allocMs = Date.now() - startAt;
}
process.stdout.write(JSON.stringify(result) + '\n');
lines.on('close', () => {
  server?.close();
  process.exit(0);
});
