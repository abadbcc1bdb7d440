/**
 * Child of bench/scale-up.ts, run in a fresh network namespace: times reserveSet() for a
 * whole stack's ports in one pass, as `berth up` does before starting anything:
 *   singles  N requests of 1 port (N replicas with one port each)
 *   sets     N requests of 1 port plus N blocks of 16 contiguous ports (N port sets)
 * from one range (20000-60999 minus the namespace's ephemeral range, which is moved to
 * 61000-65000 so the band is all usable), with the holds on, as berth up holds them; each
 * repetition releases everything after (its lease names gone before the next; the leases
 * are abstract socket names of the namespace, docs/leases.md). argv[2]: JSON
 * {n, reps}. Prints one JSON line: ms per pass for each shape.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setOptions } from '../src/allocate/allocate-ports.js';
import { reserveSet, type SetRequest } from '../src/allocate/reserve-set.js';

const cfg = JSON.parse(process.argv[2] ?? '{}') as { n: number; reps: number };
const source = { kind: 'range' as const, range: { lo: 20000, hi: 60999 } };
const singles: SetRequest[] = Array.from({ length: cfg.n }, (_, i) => ({ source, count: 1, name: `bench:s/${i}` }));
const sets: SetRequest[] = Array.from({ length: cfg.n }, (_, i) => [
  { source, count: 1, name: `bench:s/${i}` },
  { source, count: 16, block: true, name: `bench:s/${i}.dist` },
]).flat();

async function pass(requests: SetRequest[]): Promise<number> {
  const state = mkdtempSync(join(tmpdir(), 'berth-scale-alloc-'));
  try {
    const t0 = performance.now();
    const rs = await reserveSet(requests, setOptions({ ownerPid: process.pid }));
    const ms = performance.now() - t0;
    for (const r of rs) await r.release();
    return ms;
  } finally {
    rmSync(state, { recursive: true, force: true });
  }
}

const out = { singles: [] as number[], sets: [] as number[], setsError: undefined as string | undefined };
await pass(singles); // warm-up: code loaded and compiled, as in a berth that has parsed its stack
for (let r = 0; r < cfg.reps; r++) {
  out.singles.push(await pass(singles));
  try {
    out.sets.push(await pass(sets));
  } catch (e) {
    out.setsError = (e as Error).message.split('\n')[0];
  }
}
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(0);
