/**
 * Time from a service's listen() to the moment its readiness is reported: `berth run`
 * (ownership poll, then an HTTP probe) against the usual bash loop of `curl` every 0.5 s.
 * The service prints process.hrtime (CLOCK_MONOTONIC, shared by every process on the host)
 * from its listen callback; this process takes the same clock when the ready line (berth's
 * stderr) or the loop's "READY" arrives. Each sample's service waits a random 100-600 ms
 * before listening, so neither side profits from a lucky phase. Without a probe, side by side:
 * a port berth assigned (the ownership poll) and one the service chose itself (port 0), which
 * berth learns from the tree's listeners (issue 28: within 20 ms of listen(), as assigned ones).
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const BERTH = process.env.BERTH_BENCH_BIN ?? join(ROOT, 'dist/berth.js');
const SERVICE = join(ROOT, 'test/fixtures/services/service.mjs');
const SAMPLES = 20;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const delay = () => String(100 + Math.floor(Math.random() * 500));

/** Spawn argv; resolve with the ms between the service's stamp and the first `readyRe` line, once the process has ended. */
function sample(argv: string[], readyRe: RegExp, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const c = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env });
    let listenNs: bigint | undefined;
    let readyNs: bigint | undefined;
    let text = '';
    const look = (chunk: Buffer) => {
      const at = process.hrtime.bigint();
      text += chunk.toString();
      const m = /listening (\d+)/.exec(text);
      if (m && listenNs === undefined) listenNs = BigInt(m[1]!);
      if (readyNs === undefined && readyRe.test(text)) readyNs = at;
    };
    c.stdout.on('data', look);
    c.stderr.on('data', look);
    const timer = setTimeout(() => c.kill('SIGKILL'), 30_000);
    c.on('close', (code) => {
      clearTimeout(timer);
      if (listenNs === undefined || readyNs === undefined) return reject(new Error(`no listen/ready seen (exit ${code}):\n${text}`));
      resolvePromise(Number(readyNs - listenNs) / 1e6);
    });
  });
}

function freePort(): Promise<number> {
  return new Promise((res) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => res(p));
    });
  });
}

export interface ReadyLatency {
  berthMedianMs: number;
  curlLoopMedianMs: number;
  /** No probe: a port berth assigned (ownership is readiness), and a port the service chose (port 0) that berth learned. */
  assignedMedianMs: number;
  learnedMedianMs: number;
  samples: number;
}

export async function benchReadyLatency(): Promise<ReadyLatency> {
  const berth: number[] = [];
  const curl: number[] = [];
  const assigned: number[] = [];
  const learned: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    assigned.push(await sample([process.execPath, BERTH, 'run', '--', process.execPath, SERVICE, '--stamp', '--host', '127.0.0.1', '--delay', delay(), '--exit-after', '300'], / ready on /));
    learned.push(await sample([process.execPath, BERTH, 'run', '--port', 'learn', '--', process.execPath, SERVICE, '--stamp', '--host', '127.0.0.1', '--port', '0', '--delay', delay(), '--exit-after', '300'], / ready on /));
    berth.push(
      await sample(
        [process.execPath, BERTH, 'run', '--ready', 'http://127.0.0.1:{port}/', '--', process.execPath, SERVICE, '--stamp', '--host', '127.0.0.1', '--delay', delay(), '--exit-after-served', '300'],
        / ready on /,
      ),
    );
    const port = await freePort();
    const script = `${JSON.stringify(process.execPath)} ${JSON.stringify(SERVICE)} --stamp --host 127.0.0.1 --port ${port} --delay ${delay()} --exit-after-served 300 &
until curl -sf -o /dev/null http://127.0.0.1:${port}/; do sleep 0.5; done
echo READY
wait`;
    curl.push(await sample(['bash', '-c', script], /READY/));
  }
  return { berthMedianMs: median(berth), curlLoopMedianMs: median(curl), assignedMedianMs: median(assigned), learnedMedianMs: median(learned), samples: SAMPLES };
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const r = await benchReadyLatency();
  console.log(JSON.stringify(r));
}
