import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BerthError, EXIT } from '../src/errors.js';
import { instanceCount, instanceWindow } from '../src/layout/index.js';
import type { Band } from '../src/layout/index.js';

const engines: Band = { name: 'engines', lo: 20000, hi: 20799, window: 100 };
const proxy: Band = { name: 'proxy', lo: 21000, hi: 21099 };
const ragged: Band = { name: 'ragged', lo: 7000, hi: 7099, window: 30 };

test('instance i of a windowed band gets lo+i*window … +window-1', () => {
  assert.equal(instanceCount(engines), 8);
  assert.deepEqual(instanceWindow(engines, 0), { lo: 20000, hi: 20099 });
  assert.deepEqual(instanceWindow(engines, 3), { lo: 20300, hi: 20399 });
  assert.deepEqual(instanceWindow(engines, 7), { lo: 20700, hi: 20799 });
});

test('a band without a window is one instance: the whole band', () => {
  assert.equal(instanceCount(proxy), 1);
  assert.deepEqual(instanceWindow(proxy, 0), { lo: 21000, hi: 21099 });
});

test('only whole windows count; the remainder belongs to no instance', () => {
  assert.equal(instanceCount(ragged), 3);
  assert.deepEqual(instanceWindow(ragged, 2), { lo: 7060, hi: 7089 });
});

function usage(fn: () => unknown, message: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof BerthError);
    assert.equal(e.exitCode, EXIT.USAGE);
    assert.equal(e.message, message);
    return true;
  });
}

test('out-of-band instances are usage errors naming band, instance and how many fit', () => {
  usage(
    () => instanceWindow(engines, 8),
    'band "engines" (20000-20799, window 100): instance 8 is outside the band, which fits 8 instances (0-7); widen the range or use a smaller window',
  );
  usage(
    () => instanceWindow(ragged, 3),
    'band "ragged" (7000-7099, window 30): instance 3 is outside the band, which fits 3 instances (0-2); widen the range or use a smaller window',
  );
  usage(
    () => instanceWindow(proxy, 1),
    'band "proxy" (21000-21099, no window): only instance 0 (the whole band) exists, asked for instance 1; add "window: N" to the band to cut it into per-instance windows',
  );
  usage(() => instanceWindow(engines, -1), 'band "engines" (20000-20799, window 100): instance must be a whole number ≥ 0, got -1');
  usage(() => instanceWindow(engines, 1.5), 'band "engines" (20000-20799, window 100): instance must be a whole number ≥ 0, got 1.5');
});
