import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { explainUnavailable } from '../src/allocate/explain.js';
import { backoff, transientCompetitor } from '../src/allocate/contention.js';
import { emptyReport, planCandidates, type PlanHost, type PlanInput } from '../src/allocate/plan.js';
import type { SocketOwner } from '../src/host/host-map.js';
import { seeded } from './helpers/seeded.js';

const FIX = join(import.meta.dirname, 'fixtures', 'leases');

function loadHost(): PlanHost {
  const raw = JSON.parse(readFileSync(join(FIX, 'plan-host.json'), 'utf8')) as PlanHost & { owners: [number, SocketOwner[]][] };
  return { ...raw, owners: new Map(raw.owners) };
}

function range(lo: number, hi: number): number[] {
  return Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
}


describe('planCandidates', () => {
  const host = loadHost();
  const base = (over: Partial<PlanInput>): PlanInput => ({ source: { kind: 'range', range: { lo: 20000, hi: 20010 } }, host, ...over });

  test('sockets in any state and family on the local port exclude it; remote ports do not', () => {
    const p = planCandidates(base({}));
    assert.deepEqual(p.candidates, [20000, 20002, 20004, 20006, 20008, 20009, 20010]);
    assert.equal(p.report.considered, 11);
    assert.deepEqual(
      p.report.excluded.inUse.map((u) => [u.port, u.state]),
      [[20001, 'LISTEN'], [20003, 'TIME_WAIT'], [20005, 'LISTEN'], [20007, 'LISTEN']],
    );
    const listen = p.report.excluded.inUse[0]!;
    assert.equal(listen.pid, 4000);
    assert.equal(listen.command, 'nginx -g daemon off;');
    assert.equal(p.report.excluded.inUse[1]!.pid, undefined, 'TIME_WAIT has no owner');
    assert.equal(p.report.excluded.inUse[2]!.uid, 1001);
  });

  test('live leases are excluded and reported with owner and name', () => {
    const p = planCandidates(base({ leased: new Map([[20004, { pid: 77, name: 'web' }], [20010, {}]]) }));
    assert.deepEqual(p.candidates, [20000, 20002, 20006, 20008, 20009]);
    assert.deepEqual(p.report.excluded.leased, [{ port: 20004, pid: 77, name: 'web' }, { port: 20010 }]);
  });

  test('unreserved ephemeral ports are skipped, reserved ones inside the range are used', () => {
    const p = planCandidates(base({ source: { kind: 'range', range: { lo: 29990, hi: 30210 } } }));
    const want = [...range(29990, 29999), ...range(30100, 30199).filter((x) => x !== 30150)];
    assert.deepEqual(p.candidates, want);
    assert.equal(p.report.excluded.ephemeral, 100 + 11);
    assert.deepEqual(p.ephemeralInSource, [{ lo: 30000, hi: 30099 }, { lo: 30200, hi: 30210 }]);
    assert.deepEqual(p.report.excluded.inUse.map((u) => u.port), [30150]);
  });

  test('allowEphemeral hands out the ephemeral ports too', () => {
    const p = planCandidates(base({ source: { kind: 'range', range: { lo: 34998, hi: 35002 } }, allowEphemeral: true }));
    assert.deepEqual(p.candidates, range(34998, 35002));
    assert.equal(p.report.excluded.ephemeral, 0);
    const q = planCandidates(base({ source: { kind: 'range', range: { lo: 34998, hi: 35002 } } }));
    assert.deepEqual(q.candidates, [35000], 'only the reserved port without allowEphemeral');
  });

  test('privileged ports need both allowPrivileged and root', () => {
    const src = { kind: 'range', range: { lo: 1020, hi: 1027 } } as const;
    assert.deepEqual(planCandidates(base({ source: src })).candidates, [1024, 1025, 1026, 1027]);
    assert.equal(planCandidates(base({ source: src })).report.excluded.privileged, 4);
    assert.deepEqual(planCandidates(base({ source: src, allowPrivileged: true, isRoot: false })).candidates, [1024, 1025, 1026, 1027]);
    assert.deepEqual(planCandidates(base({ source: src, allowPrivileged: true, isRoot: true })).candidates, range(1020, 1027));
  });

  test('random strategy is a permutation of the same candidates, all in range, and seedable', () => {
    const lowest = planCandidates(base({ source: { kind: 'range', range: { lo: 20000, hi: 20500 } } })).candidates;
    const r1 = planCandidates(base({ source: { kind: 'range', range: { lo: 20000, hi: 20500 } }, strategy: 'random', rng: seeded(1) })).candidates;
    const r2 = planCandidates(base({ source: { kind: 'range', range: { lo: 20000, hi: 20500 } }, strategy: 'random', rng: seeded(1) })).candidates;
    const r3 = planCandidates(base({ source: { kind: 'range', range: { lo: 20000, hi: 20500 } }, strategy: 'random', rng: seeded(2) })).candidates;
    assert.deepEqual([...r1].sort((a, b) => a - b), lowest);
    assert.ok(r1.every((p) => p >= 20000 && p <= 20500));
    assert.deepEqual(r1, r2);
    assert.notDeepEqual(r1, lowest);
    assert.notDeepEqual(r1, r3);
    // An rng returning values at the edge never leaves the range either.
    const edge = planCandidates(base({ strategy: 'random', rng: () => 0.9999999999 })).candidates;
    assert.deepEqual([...edge].sort((a, b) => a - b), [20000, 20002, 20004, 20006, 20008, 20009, 20010]);
  });

  test('an explicit busy port has no candidates and names the holder', () => {
    const p = planCandidates(base({ source: { kind: 'port', port: 20001 } }));
    assert.deepEqual(p.candidates, []);
    const msg = explainUnavailable({ report: p.report, needed: 1, usable: 0, got: 0, ranges: p.ranges, ephemeralInSource: p.ephemeralInSource, host });
    assert.match(msg, /port 20001 is not available: it is in use: 20001 LISTEN by pid 4000 \(nginx -g daemon off;\)/);
  });

  test('a privileged port names no flag that does not exist (issue 9 §5: --allow-privileged)', () => {
    const p = planCandidates(base({ source: { kind: 'port', port: 80 } }));
    const msg = explainUnavailable({ report: p.report, needed: 1, usable: 0, got: 0, ranges: p.ranges, ephemeralInSource: p.ephemeralInSource, host });
    assert.match(msg, /port 80 is not available: it is below net\.ipv4\.ip_unprivileged_port_start=\d+, and berth does not lease privileged ports; pick a port >= \d+/);
    assert.doesNotMatch(msg, /--allow-privileged/);
  });

  test('competitors are named: a set in progress (by pid, or by hold), a berth hold, a socket closed since', () => {
    const p = planCandidates(base({ source: { kind: 'port', port: 20001 } }));
    const x = p.report.excluded;
    x.inUse = [];
    x.leased = [{ port: 20001, kind: 'pending', pid: 4242, command: 'berth port --count 4' }];
    const args = { report: p.report, needed: 1, usable: 0, got: 0, ranges: p.ranges, ephemeralInSource: p.ephemeralInSource, host };
    assert.match(explainUnavailable(args), /20001 being allocated by berth pid 4242 \(berth port --count 4\) \(a set in progress\)/);
    x.leased = [{ port: 20001, kind: 'pending', uid: 1001, user: 'alice' }];
    assert.match(explainUnavailable(args), /20001 being allocated by berth of alice, uid 1001 \(a set in progress\)/);
    x.leased = [];
    // Issue 22 item 19: another user's allocation in progress is named with its berth pid, not "process not visible".
    x.inUse = [{ port: 20001, state: 'LISTEN', uid: 0, pid: 4244, heldByBerth: true, inProgress: true }];
    assert.match(explainUnavailable(args), /20001 being allocated by berth pid 4244 \(a set in progress\)/);
    assert.doesNotMatch(explainUnavailable(args), /not visible/);
    x.inUse = [{ port: 20001, state: 'LISTEN', pid: 4243, command: 'node berth.cjs up s.yaml', heldByBerth: true }];
    assert.match(explainUnavailable(args), /20001 held by berth pid 4243/);
    x.inUse = [{ port: 20001, state: 'LISTEN', uid: 0, closedSince: true }];
    assert.match(explainUnavailable(args), /closed just after/);
    x.inUse = [{ port: 20001, state: 'LISTEN', uid: 0 }];
    assert.doesNotMatch(explainUnavailable({ ...args, isRoot: true }), /not visible/);
  });

  test('an explicit ephemeral port explains the sysctl fix, keeping the reserved list', () => {
    const p = planCandidates(base({ source: { kind: 'port', port: 31000 } }));
    const msg = explainUnavailable({ report: p.report, needed: 1, usable: 0, got: 0, ranges: p.ranges, ephemeralInSource: p.ephemeralInSource, host });
    assert.match(msg, /inside the ephemeral range 30000-40000/);
    assert.match(msg, /sysctl -w net\.ipv4\.ip_local_reserved_ports=30100-30199,31000,35000/);
    assert.match(msg, /--allow-ephemeral/);
  });

  test('a range message counts every reason', () => {
    const p = planCandidates(base({ source: { kind: 'range', range: { lo: 20000, hi: 20010 } }, leased: new Map([[20004, { pid: 77, name: 'web' }]]) }));
    p.report.excluded.bindFailed.push({ port: 20000, code: 'EADDRINUSE' });
    p.report.excluded.raced.push({ port: 20002, reason: 'leased concurrently' });
    const msg = explainUnavailable({ report: p.report, needed: 5, usable: p.candidates.length, got: 3, ranges: p.ranges, ephemeralInSource: p.ephemeralInSource, host });
    assert.match(msg, /^could not get 5 ports in range 20000-20010: got 3 of the 6 that looked usable \(11 considered\)/);
    const few = explainUnavailable({ report: p.report, needed: 9, usable: 6, got: 0, ranges: p.ranges, ephemeralInSource: p.ephemeralInSource, host });
    assert.match(few, /^only 6 usable ports in range 20000-20010 \(11 considered\), needed 9/);
    assert.match(msg, /4 in use: 20001 LISTEN by pid 4000 .*20003 TIME_WAIT by kernel-held, closing; 20005 LISTEN by uid 1001, process not visible/);
    assert.match(msg, /1 leased: 20004 leased to pid 77 "web"/);
    assert.match(msg, /1 could not be bound: 20000 EADDRINUSE/);
    assert.match(msg, /1 lost to concurrent allocators: 20002/);
  });
});

describe('contention', () => {
  test('transient competitors are retried; committed leases, strangers and TIME_WAIT are not', () => {
    const r = emptyReport({ kind: 'port', port: 1 });
    assert.equal(transientCompetitor(r), undefined);
    r.excluded.inUse.push({ port: 1, state: 'TIME_WAIT' }, { port: 2, state: 'LISTEN', pid: 9 });
    r.excluded.leased.push({ port: 3, pid: 10 });
    assert.equal(transientCompetitor(r), undefined, 'exhaustion fails at once');
    r.excluded.leased.push({ port: 4, pid: 11, kind: 'pending' });
    assert.match(transientCompetitor(r)!, /port 4 is being allocated by pid 11/);
  });

  test('backoff is jittered, grows, and stops within its budget', () => {
    let t = 0;
    const next = backoff(300, () => 0.5, () => t);
    const waits: number[] = [];
    for (let w = next(); w !== undefined; w = next()) {
      waits.push(w);
      t += w;
    }
    assert.deepEqual(waits, [20, 40, 80, 160].filter((_, i, a) => a.slice(0, i + 1).reduce((s, v) => s + v, 0) <= 300));
    assert.ok(t <= 300);
  });
});
