/**
 * One allocator process of bench/duplicates.ts. It loads every allocator under test once,
 * then serves trials: for each, it waits for the shared start time, gets one port from
 * the shared range with that trial's allocator, ~50 ms later binds it for real as a
 * service would, and keeps listening until the trial ends (so a second process handed the
 * same port fails to bind, as a second service would).
 *
 * Protocol (lines): child prints "ready"; then per trial reads a JSON TrialStart, prints
 * a JSON DupChildResult, reads "end", cleans up, prints "ended". Exits when stdin closes.
 */
import { createServer, type Server } from 'node:net';
import { createInterface } from 'node:readline';
import { loadBerth } from './lib/berth-api.js';

export type AllocatorKind = 'berth' | 'get-port' | 'portfinder' | 'naive';

export interface DupChildConfig {
  lo: number;
  hi: number;
  /** berth library to load; without it berth trials are not run. */
  lib?: string;
  bindDelayMs: number;
}

export interface TrialStart {
  kind: AllocatorKind;
  /** ms since epoch; every process of the trial starts allocating then */
  startAt: number;
  /** berth: this trial's private BERTH_STATE_DIR (leases are the namespace's socket names) */
  stateDir?: string;
}

export interface DupChildResult {
  port?: number;
  allocError?: string;
  bindOk: boolean;
  bindError?: string;
  /** start time to the port in hand */
  allocMs: number;
  /** how late this process woke after the shared start time */
  lateMs: number;
}

interface Allocation {
  port: number;
  /** Called just before the service binds (berth: close the hold, keep the lease). */
  handOff?: () => Promise<void>;
  /** End of trial. */
  cleanup?: () => Promise<void>;
}

type Allocator = (t: TrialStart) => Promise<Allocation>;

const cfg = JSON.parse(process.argv[2] ?? '{}') as DupChildConfig;

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    // Default host, [::] dual-stack: what `server.listen(port)` in a service does.
    srv.listen({ port }, () => resolve(srv));
  });
}

async function loadAllocators(): Promise<Partial<Record<AllocatorKind, Allocator>>> {
  const range = { lo: cfg.lo, hi: cfg.hi };
  const { default: getPort, portNumbers, clearLockedPorts } = await import('get-port');
  // CommonJS: the bundle puts module.exports on `default`.
  const pf = (await import('portfinder')).default;
  const out: Partial<Record<AllocatorKind, Allocator>> = {
    // get-port remembers what it handed out in this process; forget it between trials.
    'get-port': async () => ({ port: await getPort({ port: portNumbers(cfg.lo, cfg.hi) }), cleanup: async () => clearLockedPorts() }),
    portfinder: async () => ({ port: await pf.getPortPromise({ port: cfg.lo, stopPort: cfg.hi }) }),
    // Check-and-release: the pattern berth exists to replace.
    naive: async () => {
      for (let p = cfg.lo; p <= cfg.hi; p++) {
        try {
          const s = await listen(p);
          await new Promise((r) => s.close(r));
          return { port: p };
        } catch { /* taken: next */ }
      }
      throw new Error('no free port');
    },
  };
  if (cfg.lib !== undefined) {
    const berth = await loadBerth(cfg.lib);
    out.berth = async (t) => {
      const r = await berth.reserve({ source: { kind: 'range', range }, count: 1 });
      return { port: r.ports[0]!, handOff: () => r.unhold(), cleanup: () => r.release() };
    };
  }
  return out;
}

async function trial(allocate: Allocator, t: TrialStart): Promise<{ result: DupChildResult; end: () => Promise<void> }> {
  await new Promise((r) => setTimeout(r, Math.max(0, t.startAt - Date.now())));
  const result: DupChildResult = { bindOk: false, allocMs: 0, lateMs: Date.now() - t.startAt };
  let a: Allocation | undefined;
  let server: Server | undefined;
  try {
    a = await allocate(t);
    result.port = a.port;
    result.allocMs = Date.now() - t.startAt;
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
    result.allocMs = Date.now() - t.startAt;
  }
  const end = async () => {
    if (server) await new Promise((r) => server!.close(r));
    await a?.cleanup?.();
  };
  return { result, end };
}

const allocators = await loadAllocators();
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const nextLine = async () => {
  const r = await lines.next();
  if (r.done) process.exit(0);
  return r.value as string;
};
process.stdout.write('ready\n');
for (;;) {
  const t = JSON.parse(await nextLine()) as TrialStart;
  const allocate = allocators[t.kind];
  if (!allocate) throw new Error(`allocator ${t.kind} is not loaded`);
  const { result, end } = await trial(allocate, t);
  process.stdout.write(JSON.stringify(result) + '\n');
  await nextLine(); // "end": every process has reported
  await end();
  process.stdout.write('ended\n');
}
