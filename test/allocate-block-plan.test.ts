/**
 * The pure side of blocks and named sets: where a block may start (plan-block.ts) given
 * what planCandidates let through, the requests of a named set (reserve-named.ts), and the
 * exit-69 message of a block that does not fit.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { explainUnavailable } from '../src/allocate/explain.js';
import { planCandidates, type PlanHost } from '../src/allocate/plan.js';
import { blockPorts, blockStartsWithout, freeRuns, planBlockStarts } from '../src/allocate/plan-block.js';
import { namedSetRequests } from '../src/allocate/reserve-named.js';
import { BerthError } from '../src/errors.js';
import type { SocketRow } from '../src/host/host-map.js';
import { seeded } from './helpers/seeded.js';

function row(port: number, state: SocketRow['state'], inode = 1000 + port): SocketRow {
  return { family: 4, localAddress: '127.0.0.1', localPort: port, remoteAddress: '0.0.0.0', remotePort: 0, state, uid: 1000, inode: state === 'TIME_WAIT' ? 0 : inode };
}

/*
 * Host fixture: ephemeral 30050-30999 with 30060-30069 reserved; band 30000-30079.
 *   30003 LISTEN, 30010 TIME_WAIT, 30021 leased (live), 30022 pending (another allocator),
 *   30050-30059 and 30070-30079 unreserved ephemeral.
 * Free runs: 30000-30002 (3), 30004-30009 (6), 30011-30020 (10), 30023-30049 (27), 30060-30069 (10).
 */
const host: PlanHost = {
  ephemeral: { lo: 30050, hi: 30999 },
  reserved: [{ lo: 30060, hi: 30069 }],
  unprivilegedStart: 1024,
  sockets: [row(30003, 'LISTEN'), row(30010, 'TIME_WAIT'), { ...row(40010, 'ESTABLISHED'), remotePort: 30030 }],
};
const leased = new Map([
  [30021, { pid: 777, name: 'other' }],
  [30022, { pending: { pid: 778 } }],
]);
const source = { kind: 'band' as const, band: 'b', range: { lo: 30000, hi: 30079 } };
const free = () => planCandidates({ source, host, leased }).candidates;

describe('block planning', () => {
  test('free runs are the maximal stretches of candidates; TIME_WAIT, listeners, leases, pending and ephemeral ports break them', () => {
    assert.deepEqual(freeRuns(free()), [
      { lo: 30000, hi: 30002 },
      { lo: 30004, hi: 30009 },
      { lo: 30011, hi: 30020 },
      { lo: 30023, hi: 30049 },
      { lo: 30060, hi: 30069 },
    ]);
    assert.deepEqual(freeRuns([5, 3, 4, 4, 9]), [{ lo: 3, hi: 5 }, { lo: 9, hi: 9 }], 'any order, duplicates');
  });

  test('lowest: every start whose whole run is free, lowest first; a remote port of 30030 does not count', () => {
    const p = planBlockStarts(free(), 10);
    assert.deepEqual(p.starts, [30011, ...Array.from({ length: 18 }, (_, i) => 30023 + i), 30060]);
    assert.deepEqual(p.longest, { lo: 30023, hi: 30049 });
    assert.deepEqual(planBlockStarts(free(), 27).starts, [30023]);
    assert.deepEqual(planBlockStarts(free(), 28).starts, [], 'no run of 28');
    assert.deepEqual(planBlockStarts(free(), 1).starts, free(), 'a block of 1 is any single port');
  });

  test('allowEphemeral opens the ephemeral stretches to blocks', () => {
    const all = planCandidates({ source, host, leased, allowEphemeral: true }).candidates;
    assert.deepEqual(planBlockStarts(all, 57).starts, [30023], '30023-30079 is one run of 57');
  });

  test('random: the same starts in a seeded random order, so concurrent allocators spread out', () => {
    const lowest = planBlockStarts(free(), 5).starts;
    const a = planBlockStarts(free(), 5, 'random', seeded(1)).starts;
    const b = planBlockStarts(free(), 5, 'random', seeded(2)).starts;
    assert.deepEqual([...a].sort((x, y) => x - y), lowest);
    assert.notDeepEqual(a, lowest);
    assert.notDeepEqual(a, b);
  });

  test('a port lost to a race removes every start whose run contains it', () => {
    const starts = planBlockStarts(free(), 10).starts;
    const left = blockStartsWithout(starts, 10, new Set([30015, 30030]));
    assert.deepEqual(left, [30031, 30032, 30033, 30034, 30035, 30036, 30037, 30038, 30039, 30040, 30060]);
    assert.deepEqual(blockPorts(30031, 3), [30031, 30032, 30033]);
  });

  test('planning a 100-port block over a 20000-port source with half the ports busy is one pass', () => {
    const big: PlanHost = { ...host, ephemeral: { lo: 60000, hi: 60999 }, reserved: [], sockets: [] };
    for (let p = 20000; p < 40000; p++) if (p < 39000 && p % 2 === 0) big.sockets.push(row(p, 'LISTEN'));
    const c = planCandidates({ source: { kind: 'range', range: { lo: 20000, hi: 39999 } }, host: big }).candidates;
    const p = planBlockStarts(c, 100);
    assert.equal(p.starts[0], 38999);
    assert.equal(p.starts.length, 1001 - 100 + 1);
  });
});

describe('named set requests', () => {
  const band = { kind: 'band' as const, band: 'engines', instance: 2, range: { lo: 20200, hi: 20299 } };

  test('one request per entry in order, blocks flagged, leases named <set>/<entry>', () => {
    const r = namedSetRequests(
      [
        { name: 'http', kind: 'single' },
        { name: 'dist', kind: 'block', count: 32 },
      ],
      { source: band, name: 'svc.0', strategy: 'random' },
    );
    assert.deepEqual(r, [
      { source: band, strategy: 'random', count: 1, name: 'svc.0/http' },
      { source: band, strategy: 'random', count: 32, block: true, name: 'svc.0/dist' },
    ]);
  });

  test('window: the instance window less the other entries, all planned lowest first', () => {
    const r = namedSetRequests(
      [
        { name: 'http', kind: 'single' },
        { name: 'dist', kind: 'window' },
        { name: 'nccl', kind: 'block', count: 9 },
      ],
      { source: band, strategy: 'random' },
    );
    assert.deepEqual(
      r.map((q) => [q.name, q.count, q.block === true, q.strategy]),
      [
        ['http', 1, false, 'lowest'],
        ['dist', 90, true, 'lowest'],
        ['nccl', 9, true, 'lowest'],
      ],
    );
  });

  test('window without a band instance, two windows, bad names: 64 saying why; a window too small: 69', () => {
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        assert.ok(e instanceof BerthError);
        return [e.exitCode, e.message] as const;
      }
      assert.fail('no error');
    };
    const [c1, m1] = code(() => namedSetRequests([{ name: 'w', kind: 'window' }], { source: { kind: 'range', range: { lo: 1, hi: 9 } } }));
    assert.equal(c1, 64);
    assert.match(m1, /"w" is "window".*the source is a range; give a band with an instance/);
    const [c2, m2] = code(() => namedSetRequests([{ name: 'w', kind: 'window' }], { source: { kind: 'band', band: 'b', range: { lo: 1, hi: 9 } } }));
    assert.equal(c2, 64);
    assert.match(m2, /the whole band b/);
    const [c3, m3] = code(() => namedSetRequests([{ name: 'a', kind: 'window' }, { name: 'b', kind: 'window' }], { source: band }));
    assert.equal(c3, 64);
    assert.match(m3, /"a" and "b" are both "window"/);
    assert.equal(code(() => namedSetRequests([{ name: 'x', kind: 'single' }, { name: 'x', kind: 'single' }], { source: band }))[0], 64);
    const [c4, m4] = code(() => namedSetRequests([{ name: 'big', kind: 'block', count: 100 }, { name: 'w', kind: 'window' }], { source: band }));
    assert.equal(c4, 69);
    assert.match(m4, /window 20200-20299 has 100 ports and the set's other entries take 100/);
  });
});

describe('block exit-69 message', () => {
  test('names the longest free run and says to ask for a smaller block', () => {
    const plan = planCandidates({ source, host, leased });
    const m = explainUnavailable({
      report: plan.report,
      needed: 30,
      usable: plan.candidates.length,
      got: 0,
      ranges: plan.ranges,
      ephemeralInSource: plan.ephemeralInSource,
      host,
      block: { runs: 0, longest: { lo: 30023, hi: 30049 } },
    });
    assert.match(m, /^no 30 contiguous usable ports in band b \(30000-30079\) \(80 considered, 56 usable\): the longest run of usable ports is 30023-30049 \(27\)/);
    assert.match(m, /30010 TIME_WAIT/);
    assert.match(m, /30022 being allocated by berth pid 778 \(a set in progress\)/);
    assert.match(m, /20 inside the ephemeral range 30050-30999/);
    assert.match(m, /ask for a smaller block \(--block\)/);
  });
});
