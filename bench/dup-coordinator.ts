/**
 * Runs one duplicates trial inside a fresh network namespace: starts N allocator
 * processes (bench/dup-child.ts), releases them together at a shared start time once all
 * are loaded, and collects their results. argv[2]: JSON config. Prints one JSON line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { DupChildConfig, DupChildResult } from './dup-child.js';

interface Config {
  child: string;
  n: number;
  childConfig: DupChildConfig;
  timeoutMs: number;
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as Config;
const arg = JSON.stringify(cfg.childConfig);
const t0 = Date.now();

interface Kid {
  proc: ChildProcess;
  ready: Promise<void>;
  result: Promise<DupChildResult | { lost: string }>;
}

function start(): Kid {
  // Small heap limits keep 256 concurrent node processes within memory on a small box.
  const proc = spawn(process.execPath, ['--max-old-space-size=48', '--max-semi-space-size=1', cfg.child, arg], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout! });
  const it = lines[Symbol.asyncIterator]();
  const next = async () => {
    const r = await it.next();
    return r.done ? undefined : r.value;
  };
  const ready = next().then((l) => {
    if (l !== 'ready') throw new Error(`allocator process ${proc.pid} did not get ready (${l ?? 'exited'})`);
  });
  const result = ready.then(async () => {
    const l = await next();
    return l === undefined ? { lost: 'exited without a result' } : (JSON.parse(l) as DupChildResult);
  });
  result.catch(() => {});
  return { proc, ready, result };
}

const kids = Array.from({ length: cfg.n }, start);
const timer = setTimeout(() => {
  process.stderr.write(`[duplicates] trial timed out after ${cfg.timeoutMs} ms; killing allocators\n`);
  for (const k of kids) k.proc.kill('SIGKILL');
}, cfg.timeoutMs);
await Promise.all(kids.map((k) => k.ready));
const loadMs = Date.now() - t0;
// Far enough ahead that every process has the time before it is due.
const startAt = Date.now() + 200 + cfg.n;
for (const k of kids) k.proc.stdin!.write(`${startAt}\n`);
const results = await Promise.all(kids.map((k) => k.result));
clearTimeout(timer);
// Everyone has bound (or failed) with all listeners still open: now let them go.
await Promise.all(
  kids.map(
    (k) =>
      new Promise<void>((resolve) => {
        if (k.proc.exitCode !== null || k.proc.signalCode !== null) return resolve();
        k.proc.once('exit', () => resolve());
        k.proc.stdin!.end();
      }),
  ),
);
process.stdout.write(JSON.stringify({ results, loadMs, totalMs: Date.now() - t0 }) + '\n');
