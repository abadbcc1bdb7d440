/**
 * Runs the duplicates trials of one concurrency level inside a fresh network namespace:
 * starts N allocator processes (bench/dup-child.ts) once, waits until all have loaded,
 * then for each trial hands every process the same start time and collects the results.
 * Processes are reused across trials so the run pays N node startups per level, not per
 * trial. argv[2]: JSON config. Prints one JSON line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { DupChildConfig, DupChildResult, TrialStart } from './dup-child.js';

interface Config {
  child: string;
  n: number;
  childConfig: DupChildConfig;
  trials: Omit<TrialStart, 'startAt'>[];
  /** per trial */
  timeoutMs: number;
}

export interface TrialOutcome {
  kind: TrialStart['kind'];
  results: (DupChildResult | { lost: string })[];
  ms: number;
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as Config;
const arg = JSON.stringify(cfg.childConfig);
const t0 = Date.now();

interface Kid {
  proc: ChildProcess;
  next: () => Promise<string | undefined>;
}

function start(): Kid {
  // Small heap limits keep hundreds of concurrent node processes modest in memory.
  const proc = spawn(process.execPath, ['--max-old-space-size=64', '--max-semi-space-size=2', cfg.child, arg], { stdio: ['pipe', 'pipe', 'inherit'] });
  proc.stdin!.on('error', () => {}); // a dead child shows up as a lost result instead
  const it = createInterface({ input: proc.stdout! })[Symbol.asyncIterator]();
  return {
    proc,
    next: async () => {
      const r = await it.next();
      return r.done ? undefined : (r.value as string);
    },
  };
}

function withTimeout<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${cfg.timeoutMs} ms`)), cfg.timeoutMs);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

const kids = Array.from({ length: cfg.n }, start);
try {
  await withTimeout(
    Promise.all(
      kids.map(async (k) => {
        const l = await k.next();
        if (l !== 'ready') throw new Error(`allocator process ${k.proc.pid} did not get ready (${l ?? 'exited'})`);
      }),
    ),
    `starting ${cfg.n} allocator processes`,
  );
  const loadMs = Date.now() - t0;
  const outcomes: TrialOutcome[] = [];
  for (const t of cfg.trials) {
    const began = Date.now();
    // Far enough ahead that every process has the line before it is due.
    const startAt = Date.now() + 200 + cfg.n;
    const line = JSON.stringify({ ...t, startAt }) + '\n';
    for (const k of kids) k.proc.stdin!.write(line);
    const results = await withTimeout(
      Promise.all(
        kids.map(async (k) => {
          const l = await k.next();
          return l === undefined ? { lost: 'exited without a result' } : (JSON.parse(l) as DupChildResult);
        }),
      ),
      `${t.kind} trial`,
    );
    // Everyone has bound (or failed) with all listeners still open: now end the trial.
    for (const k of kids) k.proc.stdin!.write('end\n');
    await withTimeout(Promise.all(kids.map((k) => k.next())), `${t.kind} trial cleanup`);
    outcomes.push({ kind: t.kind, results, ms: Date.now() - began });
  }
  process.stdout.write(JSON.stringify({ loadMs, outcomes }) + '\n');
} finally {
  for (const k of kids) {
    k.proc.stdin!.end();
    // A hung child must not keep the namespace (and the harness) alive.
    setTimeout(() => k.proc.kill('SIGKILL'), 5000).unref();
  }
}
