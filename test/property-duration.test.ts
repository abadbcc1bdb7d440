/**
 * Durations (util/duration.ts, cli/values.ts): any text gives a whole number of ms (or
 * Infinity for a numeral past a double, which the timer check refuses), or "not a
 * duration" — quickly; the CLI form gives a value or a usage error (64).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseDurationArg } from '../src/cli/values.js';
import { DEADLINE, GRACE, MAX_TIMER_MS, parseDuration } from '../src/util/duration.js';
import { anyText, holds, outcome, tokenSoup } from './helpers/property.js';

const UNIT_MS: Record<string, number> = { '': 1000, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const durationText = fc.oneof(anyText(), tokenSoup(['1', '0', '.', '5', 'ms', 's', 'm', 'h', ' ', '\t', '\n', '-', '+', 'e', '9'.repeat(30)]));

test('parseDuration: any text gives undefined or a whole number of ms ≥ 0, quickly', () => {
  holds(
    durationText,
    (t) => {
      const r = outcome(() => parseDuration(t));
      assert.ok(r.ok);
      const v = r.value;
      assert.ok(v === undefined || v === Infinity || (Number.isInteger(v) && v >= 0), `${JSON.stringify(t)} → ${v}`);
    },
    { seed: 1101, numRuns: 500 },
  );
});

test('parseDuration: N UNIT with blanks around means round(N × unit)', () => {
  holds(
    fc.record({ n: fc.integer({ min: 0, max: 10_000_000 }), frac: fc.option(fc.integer({ min: 0, max: 999 })), unit: fc.constantFrom('', 'ms', 's', 'm', 'h'), pad: fc.constantFrom('', ' ', '\t', '  ') }),
    ({ n, frac, unit, pad }) => {
      const num = frac === null ? `${n}` : `${n}.${frac}`;
      assert.equal(parseDuration(`${pad}${num}${pad}${unit}${pad}`), Math.round(Number(num) * UNIT_MS[unit]!));
    },
    { seed: 1102, numRuns: 300 },
  );
});

test('parseDurationArg: a value within the timer limit, or exit 64', () => {
  holds(
    fc.tuple(durationText, fc.constantFrom(DEADLINE, GRACE, undefined)),
    ([t, rule]) => {
      const r = outcome(() => parseDurationArg('run', '--ready-timeout', t, rule), new Set([64]));
      if (r.ok && rule !== undefined) assert.ok(r.value >= (rule === DEADLINE ? 1 : 0) && r.value <= MAX_TIMER_MS, `${JSON.stringify(t)} → ${r.value}`);
    },
    { seed: 1103, numRuns: 300 },
  );
});

test('regression: blanks between number and junk cost linear time (was quadratic: 40,000 took 9 s)', () => {
  for (const n of [40_000, 400_000]) {
    const r = outcome(() => parseDuration(`1${' '.repeat(n)}x`));
    assert.deepEqual(r, { ok: true, value: undefined });
  }
});
