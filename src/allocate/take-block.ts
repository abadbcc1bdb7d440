import { abortPoint } from './allocation-abort.js';
import { giveBack, unholdTaken, type Taken } from './held-reservation.js';
import { blockPorts, type BlockPlan } from './plan-block.js';

/**
 * Lease and hold the first run of the plan whose every port can be had (pushed onto `got`), or
 * undefined (reasons in the report). A run that loses a port is given back at once, and later
 * starts whose run holds a lost port are skipped. Ports are bound BLOCK_CHUNK at a time.
 */
export async function takeBlock(
  plan: BlockPlan,
  count: number,
  take: (port: number, holdAddress: string | undefined) => Promise<Taken | undefined>,
  got: Taken[],
  signal: AbortSignal | undefined,
  mine: ReadonlySet<number> = new Set(),
  cursor: { next: number } = { next: 0 },
): Promise<number[] | undefined> {
  const lost: number[] = [];
  for (; cursor.next < plan.starts.length; cursor.next++) {
    const start = plan.starts[cursor.next]!;
    if (lost.some((p) => p >= start && p < start + count)) continue;
    const ports = blockPorts(start, count);
    if (ports.some((p) => mine.has(p))) continue;
    await abortPoint(signal);
    const run: Taken[] = [];
    let error: unknown;
    let failed = false;
    for (let k = 0; k < count && !failed; k += BLOCK_CHUNK) {
      const chunk = ports.slice(k, k + BLOCK_CHUNK);
      // Blocks are never handed over as fds: they are proved bindable on the wildcard, the strictest claim.
      const results = await Promise.allSettled(chunk.map((p) => take(p, undefined)));
      results.forEach((r, j) => {
        if (r.status === 'rejected') error ??= r.reason;
        else if (r.value === undefined) lost.push(chunk[j]!);
        else run.push(r.value);
      });
      failed = error !== undefined || run.length < k + chunk.length;
      // Proved: the lease keeps other allocators off, and a block is not held once allocated
      // anyway. Letting go chunk by chunk keeps a 4096-port block within 1024 descriptors.
      if (count > BLOCK_CHUNK) await Promise.all(run.slice(k).map(unholdTaken));
    }
    if (!failed) {
      got.push(...run);
      cursor.next++;
      return ports;
    }
    await giveBack(run);
    if (error !== undefined) throw error;
  }
  return undefined;
}

/** Ports of a block bound at once: bounded so that a large block does not run out of file descriptors. */
const BLOCK_CHUNK = 256;
