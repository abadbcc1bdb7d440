/**
 * Placeholders (stack/file/placeholders.ts): parsing any template never throws and loses nothing
 * (literals re-escaped plus placeholders give the template back); resolving gives a string
 * with every placeholder filled, or a BerthError 65 for a malformed template; a list formatted
 * per entry is the bare list with each entry written by the pattern.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { resolveCommand, resolveTemplate, } from '../src/stack/file/fill-placeholders.js';
import type { ReplicaContext } from '../src/stack/file/replica-context.js';
import { parseTemplate } from '../src/stack/file/placeholders.js';
import { anyText, holds, outcome, tokenSoup } from './helpers/property.js';

const TOKENS = ['{', '}', '{{', '}}', '{port}', '{replica}', '{name}', '{host}', '{gpu}', '{engine.url}', '{engine.urls}', '{engine.port}', '{engine.ports}', '{db.port}', '{x.y.port}', '{Engine-2.url}', '{.port}', '{port', 'port}', '{}', '{ port }', 'http://', ':',
  // per-entry formats (list-format.ts)
  '|', '{engine.urls|', '{engine.hostports|nats://{}}', '{db.ports|{index}={hostport}|;}', '{index}', '{hostport}', '{engine.port|',
  // lists spread into command words
  '...', '{...', '{...engine.hostports}', '{...engine.urls|-u={}}', '{...port}', '{...db.ports|{}|;}'];
const template = fc.oneof(anyText(80), tokenSoup(TOKENS, 20));

const ctx: ReplicaContext = {
  name: 'svc',
  replica: 1,
  replicas: 2,
  host: '::',
  port: 20001,
  gpu: 3,
  endpoints: new Map([
    ['engine', [{ host: '127.0.0.1', port: 20100 }, { host: '::1', port: 20101 }]],
    ['db', [{ host: '0.0.0.0', port: 5432 }]],
    ['Engine-2', [{ host: '10.0.0.2', port: 9 }]],
  ]),
};

test('parseTemplate: never throws; literals (with "{" written "{{") and placeholders give the template back', () => {
  holds(
    template,
    (t) => {
      for (const commandWord of [false, true]) {
        const r = outcome(() => parseTemplate(t, { commandWord }));
        assert.ok(r.ok);
        const { parts, errors } = r.value;
        if (errors.length > 0) continue; // malformed: refused at load, its text kept only for messages
        const back = parts.map((p) => (typeof p === 'string' ? p.split('{').join('{{') : p.text)).join('');
        assert.equal(back, t);
      }
    },
    { seed: 3301, numRuns: 500 },
  );
});

test('resolveTemplate: every placeholder filled, or exit 65 for a malformed template', () => {
  holds(
    template,
    (t) => {
      // 70 is a caller's bug (a service that is no dependency): the loader refuses those first.
      const r = outcome(() => resolveTemplate(t, ctx), new Set([65, 70]));
      const { errors, parts } = parseTemplate(t);
      if (!r.ok) {
        if (r.error.exitCode === 65) assert.ok(errors.length > 0, r.error.message);
        else assert.ok(parts.some((p) => typeof p !== 'string' && p.kind === 'service' && !ctx.endpoints.has(p.service)), r.error.message);
        return;
      }
      assert.equal(errors.length, 0);
      // Nothing placeholder-shaped survives except what the template wrote as a literal.
      const literals = parts.filter((p): p is string => typeof p === 'string').join('');
      for (const m of r.value.matchAll(/\{(port|replica|name|host|gpu)\}/g)) assert.ok(literals.includes(m[0]) || ctx.host.includes(m[0]), `${JSON.stringify(t)} → ${r.value}`);
    },
    { seed: 3302, numRuns: 500 },
  );
});

test('resolveTemplate: placeholders mean this replica and its dependencies', () => {
  assert.equal(resolveTemplate('{{"p": {port}, "r": {replica}} {engine.urls} {db.url} {gpu}', ctx), '{"p": 20001, "r": 1} http://127.0.0.1:20100,http://[::1]:20101 http://127.0.0.1:5432 3');
});

test('resolveCommand: a {...LIST|P{}S} word is the bare list, one word per entry between P and S; any other word is resolveTemplate\'s', () => {
  const lists = ['engine.ports', 'engine.urls', 'engine.hosts', 'engine.hostports', 'db.urls'];
  const spread = fc.record({ list: fc.constantFrom(...lists), pre: plain, post: plain }).map(({ list, pre, post }) => ({
    word: pre === '' && post === '' ? `{...${list}}` : `{...${list}|${pre}{}${post}}`,
    words: resolveTemplate(`{${list}}`, ctx).split(',').map((v) => pre + v + post),
  }));
  const other = template.map((word) => ({ word, words: undefined }));
  holds(
    fc.array(fc.oneof(spread, other), { maxLength: 6 }),
    (items) => {
      const r = outcome(() => resolveCommand(items.map((x) => x.word), ctx), new Set([65, 70]));
      const want: string[] = [];
      for (const x of items) {
        if (x.words) {
          want.push(...x.words);
          continue;
        }
        const whole = parseTemplate(x.word, { commandWord: true });
        const only = whole.parts[0];
        if (whole.errors.length === 0 && whole.parts.length === 1 && typeof only !== 'string' && only?.kind === 'service' && only.spread) {
          // A word that is a spread list: its entries, as the same format joined by a separator no entry holds.
          const inner = only.text.slice('{...'.length, -1);
          want.push(...resolveTemplate(`{${inner}${only.format ? '' : '|{}'}|\u2063}`, ctx).split('\u2063'));
          continue;
        }
        const one = outcome(() => resolveTemplate(x.word, ctx), new Set([65, 70]));
        if (!one.ok) {
          // A malformed word (or a misplaced spread, refused at load) fails the whole command.
          assert.ok(!r.ok, x.word);
          return;
        }
        want.push(one.value);
      }
      assert.ok(r.ok, JSON.stringify(items));
      assert.deepEqual(r.value, want);
    },
    { seed: 3304, numRuns: 300 },
  );
});

/** Text without the format's own characters ("{", "}", "|"): a pattern's literal parts, a separator. */
const plain = fc.string({ maxLength: 8 }).map((x) => x.replace(/[{}|]/g, ''));

test('a per-entry format: {LIST|P{}S|SEP} is the bare list, each entry between P and S, joined by SEP', () => {
  const lists = ['engine.ports', 'engine.urls', 'engine.hosts', 'engine.hostports', 'db.urls'];
  holds(
    fc.record({ list: fc.constantFrom(...lists), pre: plain, post: plain, sep: fc.option(plain, { nil: undefined }) }),
    ({ list, pre, post, sep }) => {
      const t = `{${list}|${pre}{}${post}${sep === undefined ? '' : `|${sep}`}}`;
      const bare = resolveTemplate(`{${list}}`, ctx).split(',');
      assert.equal(resolveTemplate(t, ctx), bare.map((v) => pre + v + post).join(sep ?? ','), t);
      // {index} counts the entries in order.
      assert.equal(resolveTemplate(`{${list}|{index}| }`, ctx), bare.map((_, i) => i).join(' '));
    },
    { seed: 3303, numRuns: 300 },
  );
});
