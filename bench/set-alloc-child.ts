/**
 * Child of bench/set-alloc.ts, run inside a fresh network namespace: holds sockets on half
 * of a band, then times reserveSet() of one port, of a set of one port and a 100-port block,
 * and of 100 separate ports, each followed by its release. argv[2]: JSON config. Prints one
 * JSON line with the per-repetition milliseconds.
 */
import net from 'node:net';
import { planCandidates } from '../src/allocate/plan.js';
import { planBlockStarts } from '../src/allocate/plan-block.js';
import { readLeaseTable } from '../src/allocate/lease-domain.js';
import { reserveSet, type SetRequest } from '../src/allocate/reserve-set.js';
import { readHostMap } from '../src/host/read-host.js';
import { nowMs } from './lib/stats.js';

interface Config {
  lo: number;
  hi: number;
  block: number;
  busy: number[];
  reps: number;
  stateDir: string;
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as Config;
const source = { kind: 'range' as const, range: { lo: cfg.lo, hi: cfg.hi } };

function listen(port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen({ port, host: '127.0.0.1' }, () => resolve(s));
  });
}

const held: net.Server[] = [];
for (const p of cfg.busy) held.push(await listen(p));

const loops: Record<string, SetRequest[]> = {
  single: [{ source, count: 1 }],
  set: [
    { source, count: 1 },
    { source, count: cfg.block, block: true },
  ],
  separate: [{ source, count: cfg.block }],
};
const ms: Record<string, number[]> = { plan: [], hostMap: [], leaseScan: [] };
const releaseMs: Record<string, number[]> = {};
const where: Record<string, number[][]> = {};
for (const k of Object.keys(loops)) {
  ms[k] = [];
  releaseMs[k] = [];
}
// Repetitions interleave the loops, so drift spreads over all of them; the first is a warm-up.
for (let rep = 0; rep <= cfg.reps; rep++) {
  for (const [k, req] of Object.entries(loops)) {
    const t0 = nowMs();
    const rs = await reserveSet(req, {});
    const t1 = nowMs();
    where[k] = rs.map((r) => [r.ports[0]!, r.ports[r.ports.length - 1]!]);
    await Promise.all(rs.map((r) => r.release()));
    if (rep > 0) {
      ms[k]!.push(t1 - t0);
      releaseMs[k]!.push(nowMs() - t1);
    }
  }
  // The parts every attempt pays once, whatever the block size: the socket table, the lease table (/proc/net/unix), the plan.
  let t = nowMs();
  const host = readHostMap({ localPorts: [source.range] });
  if (rep > 0) ms.hostMap!.push(nowMs() - t);
  t = nowMs();
  readLeaseTable();
  if (rep > 0) ms.leaseScan!.push(nowMs() - t);
  t = nowMs();
  const plan = planCandidates({ source, host, strategy: 'lowest' });
  planBlockStarts(plan.candidates, cfg.block);
  if (rep > 0) ms.plan!.push(nowMs() - t);
}
const busyInTable = readHostMap({ localPorts: [source.range] }).sockets.length;
for (const s of held) s.close();
process.stdout.write(`${JSON.stringify({ ms, releaseMs, where, busyInTable })}\n`);
process.exit(0);
