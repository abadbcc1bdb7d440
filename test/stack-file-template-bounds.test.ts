/**
 * Issue 22 §7: nested list sections multiply (40 nested {{#replicas}} over 2 replicas render
 * 2^40 copies; 5,000 levels overflowed the stack). Rendering is bounded before it starts:
 * nesting deeper than 16, or an output estimated over 16 MiB, is a DATAERR (65) naming the
 * template line, at render time and at the stack's load time (`berth up` refuses it before
 * anything starts, quickly, so no signal waits behind a render).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BerthError, EXIT } from '../src/errors.js';
import { MAX_SECTION_DEPTH } from '../src/stack/file/template-bounds.js';
import { renderTemplateText } from '../src/stack/file/templates.js';
import { berth, tempStateDir } from './helpers/cli.js';

const nested = (n: number, name = 'replicas', body = '{{port}}\n') => `head\n${`{{#${name}}}\n`.repeat(n)}${body}${`{{/${name}}}\n`.repeat(n)}`;
/** n entries a level, `depth` levels deep: every entry carries its own list, as the loop rule (a tag inside a section names a field of its entries) requires. */
type Level = { port: number; index?: number; replicas?: Level[] };
const entries = (n: number, depth: number): Level[] =>
  Array.from({ length: n }, (_, i) => (depth > 1 ? { port: 9000 + i, index: i, replicas: entries(n, depth - 1) } : { port: 9000 + i, index: i }));
const ctx = (n: number, depth = 1) => ({ port: 8000, replicas: entries(n, depth) });

function refused(text: string, context: object): string {
  const t0 = performance.now();
  try {
    renderTemplateText(text, context, 'conf.mustache');
  } catch (e) {
    assert.ok(e instanceof BerthError, String(e));
    assert.equal(e.exitCode, EXIT.DATAERR);
    assert.ok(performance.now() - t0 < 5_000, 'refused at once, not after rendering');
    return e.message;
  }
  assert.fail('rendered');
}

test('sections nested deeper than 16 are refused (65) naming the line of the first too deep', () => {
  assert.equal(refused(nested(40), ctx(2)), `conf.mustache:${MAX_SECTION_DEPTH + 2}: template sections nest more than 16 deep here ({{#replicas}}); berth renders at most 16 levels (close the sections above it)`);
  // 5,000 levels: the same message, not "Maximum call stack size exceeded".
  assert.match(refused(nested(5000), ctx(2)), /^conf\.mustache:18: template sections nest more than 16 deep/);
});

test('an output estimated over 16 MiB is refused (65) naming the section that multiplies', () => {
  // 6 levels over 20 replicas: 64 million bodies.
  assert.match(refused(nested(6), ctx(20)), /^conf\.mustache:\d+: this section \(\{\{#replicas\}\}\) would render more than 16 MiB/);
});

test('what real configs nest still renders', () => {
  const out = renderTemplateText(nested(3), ctx(2, 3), 'conf.mustache');
  assert.equal(out.split('\n').filter((l) => /^\d+$/.test(l)).length, 8);
  assert.equal(renderTemplateText(nested(16), ctx(1, 16), 'conf.mustache').match(/9000/g)?.length, 1);
});

test('berth up refuses a 40-deep template at load time (65), at once, naming the template line', async () => {
  const d = mkdtempSync(join(tmpdir(), 'berth-tpl-bounds-'));
  writeFileSync(join(d, 'deep.conf.mustache'), nested(40));
  writeFileSync(join(d, 'stack.yaml'), 'services:\n  web:\n    replicas: 2\n    command: [cat, "{templates.c}"]\n    templates: { c: deep.conf.mustache }\n');
  const t0 = Date.now();
  const r = await berth(['up', join(d, 'stack.yaml'), '--run-dir', join(d, 'run')], { env: { BERTH_STATE_DIR: tempStateDir() }, timeoutMs: 60_000 });
  assert.equal(r.code, 65, r.stderr);
  assert.match(r.stderr, /stack\.yaml:5: service "web": template "c": .*deep\.conf\.mustache:18: template sections nest more than 16 deep/);
  assert.ok(Date.now() - t0 < 30_000, `took ${Date.now() - t0} ms`);
});
