import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  assignLanes, bandWindows, ephemeralOverlap, groupByColumn, labelSpan, laneCount, locatePort, makeScale, niceTicks, portCenterX,
  portX, pxPerPort, rangeRect, textWidth, xToPort, zoomDomain,
} from '../src/report/geometry.js';

const full = makeScale({ lo: 0, hi: 65535 }, 100, 1024);

describe('port -> x', () => {
  test('the strip is split into one equal cell per port', () => {
    assert.equal(pxPerPort(full), 1024 / 65536);
    assert.equal(portX(full, 0), 100);
    assert.equal(portX(full, 32768), 100 + 512);
    assert.equal(portX(full, 65536), 1124, 'the end of port 65535 is the right edge');
    assert.equal(portCenterX(full, 0), 100 + 1024 / 65536 / 2);
  });

  test('ports outside the domain clamp to its edges', () => {
    const s = makeScale({ lo: 7000, hi: 7099 }, 0, 100);
    assert.equal(portX(s, 10), 0);
    assert.equal(portX(s, 9000), 100);
    assert.equal(portX(s, 7050), 50);
  });

  test('xToPort inverts portX', () => {
    const s = makeScale({ lo: 9000, hi: 65499 }, 10, 1130);
    for (const p of [9000, 9001, 20000, 32768, 65499]) assert.equal(xToPort(s, portX(s, p) + 0.001), p);
    assert.equal(xToPort(s, -5), 9000);
    assert.equal(xToPort(s, 1e6), 65499);
  });

  test('an empty domain or zero width is refused', () => {
    assert.throws(() => makeScale({ lo: 5, hi: 4 }, 0, 10), RangeError);
    assert.throws(() => makeScale({ lo: 0, hi: 4 }, 0, 0), RangeError);
  });
});

describe('ranges -> rectangles', () => {
  test('a range becomes its exact share of the strip', () => {
    const r = rangeRect(full, { lo: 9000, hi: 65499 });
    assert.ok(r);
    assert.equal(r.x, portX(full, 9000));
    assert.ok(Math.abs(r.width - (56500 * 1024) / 65536) < 1e-9);
  });

  test('adjacent ranges share an edge exactly', () => {
    const a = rangeRect(full, { lo: 3000, hi: 4999 })!;
    const b = rangeRect(full, { lo: 5000, hi: 5999 })!;
    assert.equal(a.x + a.width, b.x);
  });

  test('a single port gets the minimum visible width, centred on it, kept inside the strip', () => {
    const r = rangeRect(full, { lo: 50051, hi: 50051 }, 3)!;
    assert.equal(r.width, 3);
    assert.ok(Math.abs(r.x + 1.5 - portCenterX(full, 50051)) < 1e-9);
    const first = rangeRect(full, { lo: 0, hi: 0 }, 3)!;
    assert.equal(first.x, 100);
    const last = rangeRect(full, { lo: 65535, hi: 65535 }, 3)!;
    assert.equal(last.x + last.width, 1124);
  });

  test('ranges are clipped to the domain; outside it there is no rectangle', () => {
    const s = makeScale({ lo: 6900, hi: 8699 }, 0, 1800);
    assert.deepEqual(rangeRect(s, { lo: 8600, hi: 9599 }), { x: 1700, width: 100 });
    assert.equal(rangeRect(s, { lo: 1400, hi: 1999 }), undefined);
    assert.equal(rangeRect(s, { lo: 8700, hi: 9000 }), undefined);
  });
});

describe('zoomed strips', () => {
  test('a band is shown with a margin either side', () => {
    const d = zoomDomain({ lo: 7000, hi: 8599 });
    assert.ok(d.lo < 7000 && d.hi > 8599);
    assert.equal(7000 - d.lo, d.hi - 8599);
    const s = makeScale(d, 0, 1000);
    const r = rangeRect(s, { lo: 7000, hi: 8599 })!;
    assert.ok(r.width > 850 && r.width < 900, `band fills most of the zoom (${r.width})`);
  });

  test('a single asked port gets context and stays centred', () => {
    const d = zoomDomain({ lo: 8000, hi: 8000 }, { minSpan: 64 });
    assert.equal(d.hi - d.lo + 1, 64);
    assert.ok(d.lo <= 7970 && d.hi >= 8030);
  });

  test('zooms near the ends of the port space are clamped to 0-65535 and keep their size', () => {
    assert.deepEqual(zoomDomain({ lo: 0, hi: 9 }, { minSpan: 64 }), { lo: 0, hi: 63 });
    assert.deepEqual(zoomDomain({ lo: 65530, hi: 65535 }, { minSpan: 64 }), { lo: 65472, hi: 65535 });
    assert.deepEqual(zoomDomain({ lo: 0, hi: 65535 }), { lo: 0, hi: 65535 });
  });
});

describe('overlap with the ephemeral range', () => {
  const unreserved = [{ lo: 9000, hi: 19999 }, { lo: 21000, hi: 50050 }, { lo: 50052, hi: 65499 }];
  test('the part of a band in the unreserved ephemeral range', () => {
    assert.deepEqual(ephemeralOverlap({ lo: 8600, hi: 9599 }, unreserved), [{ lo: 9000, hi: 9599 }]);
  });
  test('reserved holes split the overlap', () => {
    assert.deepEqual(ephemeralOverlap({ lo: 19990, hi: 21009 }, unreserved), [{ lo: 19990, hi: 19999 }, { lo: 21000, hi: 21009 }]);
    assert.deepEqual(ephemeralOverlap({ lo: 50040, hi: 50060 }, unreserved), [{ lo: 50040, hi: 50050 }, { lo: 50052, hi: 50060 }]);
  });
  test('a band below the range, or wholly reserved, has none', () => {
    assert.deepEqual(ephemeralOverlap({ lo: 7000, hi: 8599 }, unreserved), []);
    assert.deepEqual(ephemeralOverlap({ lo: 20000, hi: 20999 }, unreserved), []);
  });
  test('unsorted input is normalised first', () => {
    assert.deepEqual(ephemeralOverlap({ lo: 100, hi: 300 }, [{ lo: 250, hi: 400 }, { lo: 50, hi: 120 }]), [{ lo: 100, hi: 120 }, { lo: 250, hi: 300 }]);
  });
});

describe('bands and windows', () => {
  const bands = [
    { name: 'vllm', lo: 7000, hi: 8599, window: 100 },
    { name: 'gen', lo: 3000, hi: 4999, window: 250 },
    { name: 'master', lo: 1400, hi: 1999 },
    { name: 'odd', lo: 100, hi: 149, window: 20 },
  ];
  test('instance windows', () => {
    const w = bandWindows(bands[0]!);
    assert.equal(w.length, 16);
    assert.deepEqual(w[3], { lo: 7300, hi: 7399 });
    assert.deepEqual(w[15], { lo: 8500, hi: 8599 });
    assert.deepEqual(bandWindows(bands[2]!), [{ lo: 1400, hi: 1999 }]);
    assert.deepEqual(bandWindows(bands[3]!).at(-1), { lo: 140, hi: 149 }, 'a last partial window is cut at the band end');
  });
  test('locatePort names band and instance', () => {
    assert.deepEqual(locatePort(7250, bands)?.instance, 2);
    assert.equal(locatePort(7250, bands)?.band.name, 'vllm');
    assert.equal(locatePort(4999, bands)?.instance, 7);
    assert.equal(locatePort(1500, bands)?.instance, undefined);
    assert.equal(locatePort(1500, bands)?.band.name, 'master');
    assert.equal(locatePort(9000, bands), undefined);
  });
});

describe('lanes', () => {
  test('overlapping spans go to different lanes; free room is reused', () => {
    const lanes = assignLanes([
      { start: 0, end: 50 },
      { start: 40, end: 90 },
      { start: 60, end: 100 },
      { start: 95, end: 120 },
    ]);
    assert.deepEqual(lanes, [0, 1, 0, 1]);
    assert.equal(laneCount(lanes), 2);
  });

  test('the gap counts as overlap, and results follow the input order', () => {
    assert.deepEqual(assignLanes([{ start: 55, end: 60 }, { start: 0, end: 50 }], 10), [1, 0]);
    assert.deepEqual(assignLanes([{ start: 61, end: 70 }, { start: 0, end: 50 }], 10), [0, 0]);
  });

  test('no two spans in one lane overlap (random check)', () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const spans = Array.from({ length: 300 }, () => {
      const start = rnd() * 1000;
      return { start, end: start + 5 + rnd() * 80 };
    });
    const lanes = assignLanes(spans, 2);
    for (let i = 0; i < spans.length; i++) {
      for (let j = i + 1; j < spans.length; j++) {
        if (lanes[i] !== lanes[j]) continue;
        const a = spans[i]!;
        const b = spans[j]!;
        assert.ok(a.end + 2 <= b.start || b.end + 2 <= a.start, `spans ${i} and ${j} share lane ${lanes[i]}`);
      }
    }
  });

  test('a lane cap is respected (spans then share a lane)', () => {
    const same = Array.from({ length: 10 }, () => ({ start: 0, end: 10 }));
    const lanes = assignLanes(same, 0, 3);
    assert.equal(laneCount(lanes), 3);
    assert.deepEqual(assignLanes([], 0), []);
    assert.equal(laneCount([]), 0);
  });

  test('labels are kept inside the strip', () => {
    assert.deepEqual(labelSpan(2, 40, 0, 1000), { start: 0, end: 40 });
    assert.deepEqual(labelSpan(995, 40, 0, 1000), { start: 960, end: 1000 });
    assert.deepEqual(labelSpan(500, 40, 0, 1000), { start: 480, end: 520 });
  });

  test('text width grows with length and font size, and wide letters count more', () => {
    assert.ok(textWidth('vllm 7000-8599', 12) > textWidth('gen', 12));
    assert.ok(textWidth('WWW', 12) > textWidth('iii', 12));
    assert.equal(textWidth('abc', 24), 2 * textWidth('abc', 12));
  });
});

describe('ticks and grouping', () => {
  test('round ticks inside the domain', () => {
    assert.deepEqual(niceTicks({ lo: 0, hi: 65535 }, 13), [0, 10000, 20000, 30000, 40000, 50000, 60000]);
    assert.deepEqual(niceTicks({ lo: 0, hi: 65535 }, 14), [0, 5000, 10000, 15000, 20000, 25000, 30000, 35000, 40000, 45000, 50000, 55000, 60000, 65000]);
    assert.deepEqual(niceTicks({ lo: 6904, hi: 8695 }, 10), [7000, 7200, 7400, 7600, 7800, 8000, 8200, 8400, 8600]);
    assert.deepEqual(niceTicks({ lo: 42, hi: 42 }, 10), [42]);
  });

  test('points on one pixel column merge, keeping their mean x', () => {
    const s = makeScale({ lo: 0, hi: 65535 }, 0, 1000);
    const ports = [9100, 9101, 9102, 20000, 20001, 50000];
    const cols = groupByColumn(ports, (p) => portCenterX(s, p), 6);
    assert.deepEqual(cols.map((c) => c.items), [[9100, 9101, 9102], [20000, 20001], [50000]]);
    assert.ok(Math.abs(cols[0]!.x - portCenterX(s, 9101)) < 1e-9);
    assert.equal(cols[2]!.x, portCenterX(s, 50000));
  });
});
