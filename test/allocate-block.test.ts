/**
 * Blocks, named sets and rehold() against a real kernel inside a network namespace made for
 * the test (ip_local_port_range 20000-20999 there only). One run of
 * test/fixtures/scripts/allocate-block.ts does the work; each test checks one behaviour.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import { netnsUnavailable, requireNetns, runInNetns, tsNode } from './helpers/netns.js';

interface Outcome {
  ok: boolean;
  ports?: number[];
  exitCode?: number;
  message?: string;
}

let out: Record<string, unknown> = {};
let work: string;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'berth-block-'));
  if (netnsUnavailable() !== undefined) return;
  const script = join(import.meta.dirname, 'fixtures', 'scripts', 'allocate-block.ts');
  const r = await runInNetns({ ephemeral: '20000 20999' }, tsNode(script), { timeoutMs: 120_000 });
  assert.equal(r.code, 0, `scenario script failed (${r.code ?? r.signal}): ${r.stderr}`);
  out = JSON.parse(r.stdout) as Record<string, unknown>;
});

after(() => rmSync(work, { recursive: true, force: true }));

const o = (k: string) => out[k] as Outcome;
const range = (lo: number, hi: number) => Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
const ns = (t: TestContext) => requireNetns(t);

describe('blocks in a network namespace', () => {
  test('a block is contiguous and skips TIME_WAIT, listeners, leased and ephemeral ports', (t) => {
    if (!ns(t)) return;
    assert.deepEqual(o('b5').ports, range(19980, 19984));
    assert.deepEqual(o('b4a').ports, range(19986, 19989), 'not across the TIME_WAIT on 19985');
    assert.deepEqual(o('b4b').ports, range(19991, 19994), 'not across the listener on 19990');
    assert.deepEqual(o('b4c').ports, range(19996, 19999), 'not across the lease on 19995');
    assert.equal(o('b4d').exitCode, 69, 'never into the unreserved ephemeral range');
    assert.deepEqual(o('eph').ports, range(20000, 20003), '--allow-ephemeral opens it');
  });

  test('no run long enough: 69 naming the longest run and what is in the way', (t) => {
    if (!ns(t)) return;
    const m = o('tooLong');
    assert.equal(m.exitCode, 69);
    assert.match(m.message!, /^no 6 contiguous usable ports in range 19980-20010 \(31 considered, 17 usable\): the longest run of usable ports is 19980-19984 \(5\)/);
    assert.match(m.message!, /19985 TIME_WAIT by kernel-held/);
    assert.match(m.message!, new RegExp(`19990 LISTEN by pid ${out.busyPid as number} `));
    assert.match(m.message!, /19995 leased to pid \d+ "blocker" \(sleep 120\)/);
    assert.match(m.message!, /ask for a smaller block \(--block\)/);
  });

  test('leased, not held: the ports are bindable once reserve returns, and the leases are committed by their record', (t) => {
    if (!ns(t)) return;
    assert.deepEqual(out.blockFlags, [true, true, true, true, true]);
    assert.deepEqual(out.heldAfter, [false, false, false, false, false]);
    assert.deepEqual(out.bindInsideB5, ['ok', 'ok', 'ok', 'ok', 'ok']);
    const leases = out.leaseB5 as Record<string, unknown>[];
    assert.deepEqual(
      leases.map((l) => l.port),
      range(19980, 19984),
    );
    for (const l of leases) assert.equal(l.kind, 'block');
    assert.deepEqual(out.stateB5, ['live', 'live', 'live', 'live', 'live'], 'committed by its record while the holder lives');
    assert.deepEqual(out.returnedLeaseKinds, ['block']);
    assert.deepEqual(out.leasesAfterRelease, [19995], 'release removes every lease of the blocks');
  });

  test('a single and a block are one set: all or none', (t) => {
    if (!ns(t)) return;
    const none = out.setNone as Outcome & { request: number };
    assert.equal(none.exitCode, 69);
    assert.equal(none.request, 1, 'the block is the request that failed');
    assert.match(none.message!, /no 5 contiguous usable ports in range 19984-19992/);
    assert.deepEqual(out.leasesAfterSetNone, [], 'the single was given back');
    assert.equal(out.bindAfterSetNone, 'ok', 'and is not held');
    const all = out.setAll as { ports: number[][]; single: Record<string, unknown>; block: Record<string, unknown>; leases: number[]; kinds: string[] };
    assert.deepEqual(all.ports, [[21000], range(21001, 21010)]);
    assert.deepEqual(all.single, { block: false, held: true, bind: 'EADDRINUSE' });
    assert.deepEqual(all.block, { block: true, held: false, bind: 'ok' });
    assert.deepEqual(all.leases, range(21000, 21010));
    assert.deepEqual(all.kinds, ['single', ...range(21001, 21010).map(() => 'block')]);
    assert.deepEqual((all as unknown as { states: string[] }).states, ['live']);
    assert.equal(o('insideLeasedBlock').exitCode, 69, 'a port inside a leased block is not handed out');
    assert.match(o('insideLeasedBlock').message!, /21005 leased/);
  });

  test('named sets: window is the instance window less the other entries; failures name the entry', (t) => {
    if (!ns(t)) return;
    const n = out.named as { assigned: unknown[]; httpHeld: boolean; distHeld: boolean; leaseName: string };
    assert.deepEqual(n.assigned, [
      ['http', 'single', 22100, 1],
      ['dist', 'block', 22101, 98],
      ['nccl', 'single', 22199, 1],
    ]);
    assert.equal(n.httpHeld, true);
    assert.equal(n.distHeld, false);
    assert.equal(n.leaseName, 'engine.1/dist');
    assert.equal(o('namedWindowBusy').exitCode, 69);
    assert.match(o('namedWindowBusy').message!, /^port "dist" \(its window\): no 100 contiguous usable ports in band engines instance 1 \(22100-22199\)/);
    assert.equal(o('namedRangeWindow').exitCode, 64);
    assert.match(o('namedRangeWindow').message!, /"w" is "window".*the source is a range/);
    assert.equal(o('namedBlockTooBig').exitCode, 69);
    assert.match(o('namedBlockTooBig').message!, /^port "dist" \(a block of 12\): no 12 contiguous usable ports/);
  });

  test('a set in progress is passed over while free ports suffice; its port is free once its name is gone', (t) => {
    if (!ns(t)) return;
    assert.deepEqual(out.staleSkipped, { ports: [24001], inProgressStillThere: true });
    assert.deepEqual(out.staleReclaimed, { ports: [24000, 24001], lease: true });
  });

  test('rehold binds again over the TIME_WAIT a service left on its port', (t) => {
    if (!ns(t)) return;
    assert.equal(out.timeWaitBeforeRehold, true, 'the service left a TIME_WAIT on the port');
    assert.deepEqual(out.reholdAfterTimeWait, { held: true, bind: 'EADDRINUSE' });
  });

  test('rehold against another process listening on the port: 69 naming its pid; the lease stays', (t) => {
    if (!ns(t)) return;
    const r = o('reholdTaken');
    assert.equal(r.exitCode, 69);
    assert.match(r.message!, new RegExp(`^cannot hold port 23000 again \\(EADDRINUSE\\): it is in use: 23000 LISTEN by pid ${out.strangerPid as number} \\(.*node -e`));
    assert.equal(out.leaseAfterFailedRehold, true);
    assert.equal(out.reholdAfterStrangerGone, true, 'once the stranger is gone, rehold works');
    assert.deepEqual(out.blockRehold, [false, false, false], "a block's rehold holds nothing");
  });
});
