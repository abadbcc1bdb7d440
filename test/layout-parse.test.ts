import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { BerthError, EXIT } from '../src/errors.js';
import { loadLayout, parseLayout } from '../src/layout/index.js';
import { dataErrors } from './helpers/refusal.js';

const FIX = 'test/fixtures/layouts';
const fixture = (name: string) => readFileSync(join(FIX, name), 'utf8');

/** Parses a fixture that must fail, returning the error lines (message and details must agree). */
const errorsOf = (name: string): string[] => dataErrors(name, () => parseLayout(fixture(name), name));

test('valid.yaml: every accepted spelling, with 1-based lines', () => {
  const l = parseLayout(fixture('valid.yaml'), 'valid.yaml');
  assert.equal(l.source, 'valid.yaml');
  assert.deepEqual(l.bands, [
    { name: 'engines', lo: 20000, hi: 20799, window: 100, line: 3 },
    { name: 'proxy', lo: 21000, hi: 21099, line: 4 },
    { name: 'single', lo: 7000, hi: 7000, line: 6 },
    { name: 'quoted', lo: 7001, hi: 7010, window: 5, line: 7 },
    { name: 'web', lo: 22000, hi: 22099, line: 8 },
    { name: 'spaced', lo: 23000, hi: 23009, line: 9 },
    { name: 'anchored', lo: 24000, hi: 24099, window: 50, line: 10 },
  ]);
});

test('JSON is accepted', () => {
  const l = parseLayout(fixture('valid.json'), 'valid.json');
  assert.deepEqual(l.bands, [
    { name: 'engines', lo: 20000, hi: 20799, window: 100, line: 3 },
    { name: 'proxy', lo: 21000, hi: 21099, line: 4 },
  ]);
});

test('bands that touch but do not overlap are fine', () => {
  const l = parseLayout(fixture('adjacent.yaml'), 'adjacent.yaml');
  assert.deepEqual(l.bands.map((b) => [b.name, b.lo, b.hi]), [['a', 20000, 20099], ['b', 20100, 20199], ['c', 19900, 19999]]);
});

test('"bands:" with every band commented out is an empty layout (doctor reports it)', () => {
  assert.deepEqual(parseLayout(fixture('empty-bands.yaml'), 'empty-bands.yaml').bands, []);
});

test('window equal to the band size and a one-port band with window 1 are valid', () => {
  const l = parseLayout('bands:\n  a: { range: 20000-20099, window: 100 }\n  b: { range: 7000, window: 1 }\n', 'l.yaml');
  assert.deepEqual(l.bands, [
    { name: 'a', lo: 20000, hi: 20099, window: 100, line: 2 },
    { name: 'b', lo: 7000, hi: 7000, window: 1, line: 3 },
  ]);
});

test('every problem of a file is reported at once, each with file:line and band', () => {
  const f = 'bad-many.yaml';
  assert.deepEqual(errorsOf(f), [
    `${f}:3: band "proxy": range 21099-21000 has lo > hi; write it as LO-HI with LO ≤ HI`,
    `${f}:4: band "Engines2": invalid name; use lowercase letters, digits, "_" and "-", starting with a letter`,
    `${f}:5: band "typo": unknown key "windw" (did you mean "window"?); allowed keys are "range" and "window"`,
    `${f}:6: band "words": range "twenty" is not LO-HI (e.g. 20000-20799) or a single port`,
    `${f}:7: band "huge": range 60000-70000 goes outside the TCP ports 1-65535`,
    `${f}:8: band "zero": range 0-10 goes outside the TCP ports 1-65535`,
    `${f}:9: band "nowin": window must be a whole number of ports ≥ 1, found number 0`,
    `${f}:10: band "bigwin": window 101 is larger than the band (range 33000-33099 has 100 ports); use a window of at most 100 or widen the range`,
    `${f}:11: band "fracwin": window must be a whole number of ports ≥ 1, found number 1.5`,
    `${f}:12: band "hex": range "0x1F40" is not LO-HI (e.g. 20000-20799) or a single port`,
    `${f}:13: band "norange": missing "range: LO-HI"`,
    `${f}:14: band "empty": has no value; expected { range: LO-HI } or { range: LO-HI, window: N }`,
    `${f}:15: band "listed": expected { range: LO-HI } or { range: LO-HI, window: N }, found a list`,
    `${f}:16: band "proxy": defined twice (first at line 3); each band name must be unique`,
    `${f}:17: band "overlap" overlaps band "engines" (line 2) on ports 20750-20799; bands must not share ports`,
    `${f}:18: band "rangelist": range must be LO-HI (e.g. 20000-20799) or a single port, found a list`,
    `${f}:19: band "twice": "range" is given twice`,
  ]);
});

test('overlaps name both bands, the line of the earlier one and the shared ports', () => {
  const f = 'bad-overlap.yaml';
  assert.deepEqual(errorsOf(f), [
    `${f}:3: band "router" overlaps band "vllm" (line 2) on ports 23900-23999; bands must not share ports`,
    `${f}:4: band "gym" overlaps band "router" (line 3) on ports 24000-24099; bands must not share ports`,
    `${f}:5: band "whole" overlaps band "vllm" (line 2) on ports 20000-23999; bands must not share ports`,
    `${f}:5: band "whole" overlaps band "router" (line 3) on ports 23900-24099; bands must not share ports`,
    `${f}:5: band "whole" overlaps band "gym" (line 4) on ports 24000-24999; bands must not share ports`,
  ]);
});

test('YAML syntax errors carry the line that opened the unclosed bracket', () => {
  assert.deepEqual(errorsOf('bad-syntax.yaml'), [
    'bad-syntax.yaml:2: YAML syntax error: Flow map in block collection must be sufficiently indented and end with a } (the "{" opened on this line is never closed)',
  ]);
});

test('structure errors: empty file, list at the top, no bands key, bands as a list, stray top keys', () => {
  assert.deepEqual(errorsOf('bad-empty.yaml'), ['bad-empty.yaml:1: the layout is empty; expected bands: { NAME: { range: LO-HI, window: N } }']);
  assert.deepEqual(errorsOf('bad-top-list.yaml'), [
    'bad-top-list.yaml:1: the top level must be a mapping with a "bands" key, found a list; expected bands: { NAME: { range: LO-HI, window: N } }',
  ]);
  assert.deepEqual(errorsOf('bad-no-bands.yaml'), [
    'bad-no-bands.yaml:2: unknown top-level key "band" (did you mean "bands"?); the only key allowed is "bands"',
    'bad-no-bands.yaml:2: no "bands" key at the top level; expected bands: { NAME: { range: LO-HI, window: N } }',
  ]);
  assert.deepEqual(errorsOf('bad-bands-list.yaml'), [
    'bad-bands-list.yaml:2: "bands" must be a mapping of band names to { range: LO-HI, window: N }, found a list',
  ]);
  assert.deepEqual(errorsOf('bad-top-keys.yaml'), [
    'bad-top-keys.yaml:3: unknown top-level key "bandz" (did you mean "bands"?); the only key allowed is "bands"',
    'bad-top-keys.yaml:5: unknown top-level key "version"; the only key allowed is "bands"',
  ]);
  assert.deepEqual(errorsOf('bad-multidoc.yaml'), [
    'bad-multidoc.yaml:3: the file holds several YAML documents ("---"); a layout is a single document',
  ]);
  assert.deepEqual(errorsOf('bad-alias.yaml'), ['bad-alias.yaml:2: band "a": alias *missing has no matching &missing anchor']);
});

test('loadLayout reads the file and names it in every error', () => {
  const l = loadLayout(join(FIX, 'valid.json'));
  assert.equal(l.source, join(FIX, 'valid.json'));
  assert.equal(l.bands.length, 2);
  assert.throws(() => loadLayout(join(FIX, 'bad-syntax.yaml')), (e: BerthError) => e.message.startsWith(`${join(FIX, 'bad-syntax.yaml')}:2: `));
});

test('an unreadable layout file is a DATAERR naming the file and why', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-layout-'));
  try {
    const missing = join(dir, 'nope.yaml');
    assert.throws(() => loadLayout(missing), (e: BerthError) => {
      assert.equal(e.exitCode, EXIT.DATAERR);
      assert.equal(e.message, `${missing}: cannot read layout file: no such file`);
      return true;
    });
    assert.throws(() => loadLayout(dir), { exitCode: EXIT.DATAERR, message: `${dir}: cannot read layout file: it is a directory` });
    // Root reads any file, so mode 000 only proves something for other users.
    const locked = join(dir, 'locked.yaml');
    writeFileSync(locked, 'bands: {}\n');
    chmodSync(locked, 0o000);
    if (process.getuid?.() !== 0) {
      assert.throws(() => loadLayout(locked), { exitCode: EXIT.DATAERR, message: `${locked}: cannot read layout file: permission denied` });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
