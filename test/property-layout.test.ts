/**
 * The layout loader (layout/parse.ts): any text — random, YAML syntax soup, JSON of any
 * shape, layouts with wrong values — gives a layout whose bands keep every rule, or one
 * BerthError 65 listing "file:line: …" problems; never another exception, always quickly.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseLayout } from '../src/layout/parse.js';
import { anyText, holds, outcome, tokenSoup, YAML_TOKENS } from './helpers/property.js';

const DATAERR = new Set([65]);

const bandValue = fc.oneof(
  fc.tuple(fc.integer({ min: -2, max: 70000 }), fc.integer({ min: -2, max: 70000 })).map(([a, b]) => `${a}-${b}`),
  fc.integer({ min: -5, max: 70000 }),
  fc.record({ range: fc.oneof(fc.string({ maxLength: 12 }), fc.integer({ min: 1, max: 65535 }).map((lo) => `${lo}-${Math.min(65535, lo + 99)}`)), window: fc.oneof(fc.integer({ min: -1, max: 200 }), fc.string({ maxLength: 4 })) }, { requiredKeys: [] }),
  fc.jsonValue({ maxDepth: 2 }),
);

const layoutLike = fc
  .record({
    bands: fc.oneof(fc.dictionary(fc.oneof(fc.stringMatching(/^[a-z][a-z0-9_-]{0,6}$/), fc.string({ maxLength: 6 })), bandValue, { maxKeys: 6 }), fc.jsonValue({ maxDepth: 2 })),
    extra: fc.option(fc.jsonValue({ maxDepth: 1 })),
  })
  .map(({ bands, extra }) => JSON.stringify(extra === null ? { bands } : { bands, extra }, null, 2));

const layoutTexts = fc.oneof(anyText(300), tokenSoup(YAML_TOKENS), layoutLike, fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)));

test('parseLayout: any text gives bands that keep every rule, or exit 65 with file:line messages', () => {
  holds(
    layoutTexts,
    (text) => {
      const r = outcome(() => parseLayout(text, 'l.yaml'), DATAERR);
      if (!r.ok) {
        const errors = r.error.details?.errors as string[];
        assert.ok(Array.isArray(errors) && errors.length > 0);
        for (const e of errors) assert.match(e, /^l\.yaml:\d+: \S/);
        return;
      }
      const names = new Set<string>();
      for (const b of r.value.bands) {
        assert.match(b.name, /^[a-z][a-z0-9_-]*$/);
        assert.ok(!names.has(b.name));
        names.add(b.name);
        assert.ok(Number.isInteger(b.lo) && Number.isInteger(b.hi) && b.lo >= 1 && b.lo <= b.hi && b.hi <= 65535, JSON.stringify(b));
        if (b.window !== undefined) assert.ok(Number.isInteger(b.window) && b.window >= 1 && b.window <= b.hi - b.lo + 1, JSON.stringify(b));
      }
      const sorted = [...r.value.bands].sort((a, b) => a.lo - b.lo);
      for (let i = 1; i < sorted.length; i++) assert.ok(sorted[i]!.lo > sorted[i - 1]!.hi, 'bands overlap');
    },
    { seed: 5501, numRuns: 400 },
  );
});

test('regression: deep nesting is refused before parsing (parsing it twice aborted the process: V8 "RegExpCompiler Allocation failed")', () => {
  const deep = {
    flow: '['.repeat(3000) + ']'.repeat(3000),
    map: '{a: '.repeat(3000) + '}'.repeat(3000),
    list: Array.from({ length: 1200 }, (_, i) => ' '.repeat(i) + '- ').join('\n') + 'x',
    indent: Array.from({ length: 1200 }, (_, i) => ' '.repeat(i) + 'a:').join('\n') + ' x',
  };
  // Twice each: the second parse of such text used to kill the process, not throw.
  for (const round of [1, 2]) {
    for (const [kind, text] of Object.entries(deep)) {
      const r = outcome(() => parseLayout(text, 'l.yaml'), DATAERR);
      assert.ok(!r.ok, kind);
      assert.match(r.error.message, /^l\.yaml:\d+: (brackets|lists) nested more than 100 levels deep|^l\.yaml:\d+: indented more than 200 columns/, `${kind} round ${round}`);
    }
  }
  // Real layouts are far from the limits.
  assert.equal(parseLayout('bands:\n  web: { range: "20000-20099" }  # [[[[ not nesting\n', 'l.yaml').bands.length, 1);
});
