/**
 * Slurm hostlists (slurm/hostlist.ts): any text expands to host names or a BerthError 65,
 * quickly; a list built from known parts expands to what those parts mean; and compressing
 * any list of host names and expanding it again gives the same list back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { compressHostlist, expandHostlist } from '../src/slurm/hostlist.js';
import { anyText, holds, outcome, tokenSoup } from './helpers/property.js';

const DATAERR = new Set([65]);

test('expandHostlist: any text gives host names without separators, or exit 65', () => {
  holds(
    fc.oneof(anyText(), tokenSoup(['n', 'gpu-', '[', ']', ',', '-', ' ', '0', '1', '9', '01', '007', '99999', '[1-3]', '[01-10,12]', 'a[1-2]b[3-4]'])),
    (t) => {
      const r = outcome(() => expandHostlist(t, 'SLURM_JOB_NODELIST'), DATAERR);
      if (!r.ok) {
        assert.match(r.error.message, /^SLURM_JOB_NODELIST=/);
        return;
      }
      for (const h of r.value) assert.ok(h !== '' && !/[,\s\[\]]/.test(h), `${JSON.stringify(t)} gave ${JSON.stringify(h)}`);
    },
    { seed: 2201, numRuns: 500 },
  );
});

/** One item: a prefix and bracket groups of ranges, with what it must expand to. */
const bracketGroup = fc.array(
  fc.record({ lo: fc.integer({ min: 0, max: 120 }), len: fc.integer({ min: 0, max: 4 }), pad: fc.integer({ min: 0, max: 3 }) }),
  { minLength: 1, maxLength: 3 },
);
const item = fc.record({
  prefix: fc.stringMatching(/^[a-z][a-z0-9-]{0,5}$/),
  groups: fc.array(fc.record({ sep: fc.stringMatching(/^[a-z-]{0,2}$/), ranges: bracketGroup }), { maxLength: 2 }),
});

function itemText(it: { prefix: string; groups: { sep: string; ranges: { lo: number; len: number; pad: number }[] }[] }): { text: string; hosts: string[] } {
  let hosts = [''];
  let text = '';
  it.groups.forEach((g, i) => {
    const lit = i === 0 ? it.prefix : g.sep;
    const parts: string[] = [];
    const values: string[] = [];
    for (const r of g.ranges) {
      const width = String(r.lo).length + r.pad;
      const lo = String(r.lo).padStart(width, '0');
      parts.push(r.len === 0 ? lo : `${lo}-${r.lo + r.len}`);
      for (let n = r.lo; n <= r.lo + r.len; n++) values.push(String(n).padStart(width, '0'));
    }
    text += `${lit}[${parts.join(',')}]`;
    hosts = hosts.flatMap((h) => values.map((v) => h + lit + v));
  });
  if (it.groups.length === 0) {
    text = it.prefix;
    hosts = [it.prefix];
  }
  return { text, hosts };
}

test('expandHostlist: prefixes, padded ranges and several bracket groups mean what Slurm means', () => {
  holds(
    fc.array(item, { minLength: 1, maxLength: 4 }),
    (items) => {
      const built = items.map(itemText);
      const r = outcome(() => expandHostlist(built.map((b) => b.text).join(',')));
      assert.ok(r.ok, r.ok ? '' : r.error.message);
      assert.deepEqual(r.value, built.flatMap((b) => b.hosts));
    },
    { seed: 2202, numRuns: 300 },
  );
});

test('compressHostlist then expandHostlist gives any list of host names back, in order', () => {
  const host = fc.oneof(fc.stringMatching(/^[a-z][a-z0-9-]{0,6}[0-9]{0,4}$/), fc.stringMatching(/^n[0-9]{1,3}$/), fc.stringMatching(/^gpu-[0-9]{1,20}$/));
  holds(
    fc.array(host, { maxLength: 30 }),
    (hosts) => {
      const text = outcome(() => compressHostlist(hosts));
      assert.ok(text.ok);
      const back = outcome(() => expandHostlist(text.value));
      assert.ok(back.ok, back.ok ? '' : `${JSON.stringify(hosts)} → ${text.value}: ${back.error.message}`);
      assert.deepEqual(back.value, hosts, `${JSON.stringify(hosts)} → ${text.value}`);
    },
    { seed: 2203, numRuns: 500 },
  );
});

test('regression: CR separates like LF; other blanks and control characters are refused, not made host names', () => {
  assert.deepEqual(expandHostlist('n1,n[2-3]\r\n'), ['n1', 'n2', 'n3']);
  for (const t of ['\f', '\u000b', 'n\u00a01', 'gpu\u20281', 'n1\u0000']) {
    const r = outcome(() => expandHostlist(t), DATAERR);
    assert.ok(!r.ok, `${JSON.stringify(t)} gave ${JSON.stringify(r.ok ? r.value : '')}`);
    assert.match(r.error.message, /host names have no blanks or control characters/);
  }
});
