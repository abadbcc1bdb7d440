import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { README, renderReadme } from '../examples/layouts/render-doctor.js';
import { loadLayout } from '../src/layout/index.js';

test('example layouts parse', () => {
  assert.deepEqual(loadLayout('examples/layouts/rl-framework.yaml').bands.map((b) => [b.name, b.lo, b.hi, b.window]), [
    ['master', 1400, 1999, undefined],
    ['generation', 3000, 4999, undefined],
    ['gym', 5000, 5999, undefined],
    ['vllm', 7000, 8599, 100],
  ]);
  assert.deepEqual(loadLayout('examples/layouts/gpu-fixed-10000.yaml').bands.map((b) => [b.name, b.lo, b.hi, b.window]), [
    ['gpu', 10000, 12047, 256],
  ]);
});

test('examples/layouts/README.md shows the current doctor findings', () => {
  const current = readFileSync(README, 'utf8');
  assert.equal(current, renderReadme(current), 'README.md is stale: run node --import tsx examples/layouts/render-doctor.ts --write');
});
