/**
 * The contract every parser of user input keeps (issue 9 §7): any input gives a value or a
 * BerthError with a documented exit code, never another exception, and answers quickly.
 * Seeds are fixed so CI runs the same cases every time; fast-check prints the seed and the
 * shrunk counterexample when a property fails, so a failure can be replayed with that seed.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BerthError, EXIT } from '../../src/errors.js';

/** Exit codes a parser may give (design.md §4); 0 and 1 are not failures of input. */
export const DOCUMENTED_EXITS: ReadonlySet<number> = new Set(Object.values(EXIT).filter((c) => c !== EXIT.OK && c !== EXIT.FINDINGS));

/** One call's time limit: generous for a loaded 2-core machine, far below any hang. */
export const RUN_LIMIT_MS = 1000;

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: BerthError };

/**
 * Runs `f` once: its value, or the BerthError it threw (with one of `codes`). Anything else
 * (another exception, an undocumented code, a call slower than RUN_LIMIT_MS) fails the property.
 */
export function outcome<T>(f: () => T, codes: ReadonlySet<number> = DOCUMENTED_EXITS): Outcome<T> {
  const t0 = performance.now();
  let result: Outcome<T>;
  try {
    result = { ok: true, value: f() };
  } catch (e) {
    if (!(e instanceof BerthError)) throw new Error(`not a BerthError: ${(e as Error)?.stack ?? String(e)}`);
    assert.ok(codes.has(e.exitCode), `BerthError with exit code ${e.exitCode} (allowed: ${[...codes].join(', ')}): ${e.message}`);
    assert.ok(e.message.length > 0 && !/\n\s+at /.test(e.message), `a message without a stack trace: ${e.message}`);
    result = { ok: false, error: e };
  }
  const ms = performance.now() - t0;
  assert.ok(ms < RUN_LIMIT_MS, `took ${ms.toFixed(0)} ms (limit ${RUN_LIMIT_MS} ms)`);
  return result;
}

/** fc.assert with a fixed seed (replayable) and a modest run count (CI stays fast). */
export function holds<T>(arb: fc.Arbitrary<T>, predicate: (v: T) => void, o: { seed: number; numRuns?: number }): void {
  fc.assert(fc.property(arb, predicate), { seed: o.seed, numRuns: o.numRuns ?? 300 });
}

/** Text of every kind a user or a broken file can produce: ASCII, any Unicode, control bytes. */
export function anyText(maxLength = 200): fc.Arbitrary<string> {
  return fc.oneof(
    fc.string({ maxLength }),
    fc.string({ unit: 'binary', maxLength }),
    fc.string({ unit: fc.constantFrom('\n', '\t', '\r', ' ', '\0', '\u001b', '\u2028', '\ufeff', 'é', '𝄞'), maxLength: 20 }),
  );
}

/** Text made of the given tokens (syntax soup: more interesting than random characters). */
export function tokenSoup(tokens: readonly string[], maxTokens = 40): fc.Arbitrary<string> {
  return fc.array(fc.oneof(fc.constantFrom(...tokens), fc.string({ maxLength: 6 })), { maxLength: maxTokens }).map((ts) => ts.join(''));
}

/** YAML syntax that has broken parsers: anchors, aliases, merges, tags, flow, block scalars, documents. */
export const YAML_TOKENS = [
  'bands:', 'range:', 'window:', '\n', '  ', '    ', '- ', ': ', ',', '{', '}', '[', ']', '&a ', '*a', '<<: *a', '!!str ', '!!int ', '!!binary ', '!x ',
  '---\n', '...\n', '? ', '"', "'", '#', '%YAML 1.2\n', '|\n', '>\n', 'null', '~', 'true', '0x1F', '1e3', '7_000', '-1', '20000-20099', '65536', ' window: 0', '\t', '\r\n',
];
