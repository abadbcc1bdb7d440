/**
 * Template checking is linear in the number of tags (issue 32 §14): each tag's line was
 * found by scanning the text from its start, so 40,000 tags (under the 1 MiB a template may
 * have) took over a minute before anything started. Checked with a generous bound (well
 * under 10 s), not a tight time: the speed itself is bench/template-check.ts's.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { templateProblems, templateTagNames } from '../src/stack/file/templates.js';
import { requireNetns } from './helpers/netns.js';
import { box, up } from './fixtures/up/harness.js';

const TAGS = 40_000;
const big = (tag: string) => Array.from({ length: TAGS }, (_, i) => `k${i}=${tag}`).join('\n') + '\n';

test('40,000 tags: checking them and finding their lines takes well under 10 s, and the lines are right', () => {
  const text = big('{{name}}') + '{{nope}}\n';
  assert.ok(Buffer.byteLength(text) < 1 << 20, 'under the 1 MiB a template may have');
  const t0 = performance.now();
  const problems = templateProblems(text, { name: 'x' }, 'big.conf');
  const tags = templateTagNames(text);
  const ms = performance.now() - t0;
  assert.deepEqual(problems.map((p) => p.split(':').slice(0, 2).join(':')), [`big.conf:${TAGS + 1}`], problems.join('\n'));
  assert.equal(tags.length, TAGS + 1);
  assert.equal(tags[TAGS - 1]!.line, TAGS);
  assert.ok(ms < 10_000, `took ${Math.round(ms)} ms`);
});

test('berth up with a 40,000-tag template renders it and starts well within 10 s', async (t) => {
  if (!requireNetns(t)) return;
  const b = box(`
services:
  w:
    templates: { big: big.conf }
    command: [sh, -c, 'test "$(wc -l < "$0")" = ${TAGS} && cp "$0" "$1/copy"', "{templates.big}", "{dir}"]
    job: true
`);
  t.after(() => b.cleanup());
  writeFileSync(join(b.dir, 'big.conf'), big('{{replica}}'));
  const t0 = performance.now();
  const r = await up(b, [], { timeoutMs: 60_000 }).result;
  const ms = performance.now() - t0;
  assert.equal(r.code, 0, r.stderr);
  assert.ok(ms < 10_000, `berth up took ${Math.round(ms)} ms`);
  const copy = readFileSync(join(b.runDir, 'data', 'w-0', 'copy'), 'utf8');
  assert.match(copy, /^k0=0\n/);
});
