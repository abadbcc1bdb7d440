/**
 * The stack loader (stack/file/load.ts): any text — random, YAML syntax soup, JSON of any shape,
 * stacks with random settings, placeholders and dependency graphs (cycles included) — gives
 * a stack that keeps the loader's promises, or one BerthError 65 listing "file:line: …"
 * problems; never another exception, always quickly.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { parseStack } from '../src/stack/file/load.js';
import { SERVICE_NAME_RE } from '../src/stack/file/placeholders.js';
import { anyText, holds, outcome, tokenSoup, YAML_TOKENS } from './helpers/property.js';

const DATAERR = new Set([65]);
const NAMES = ['web', 'db', 'engine', 'job', 'Bad.Name', '1x'];
const name = fc.constantFrom(...NAMES);

const scalar = fc.oneof(fc.string({ maxLength: 10 }), fc.integer({ min: -3, max: 70000 }), fc.boolean(), fc.constant(null));
const templ = fc.array(fc.constantFrom('{port}', '{host}', '{name}', '{replica}', '{gpu}', '{web.url}', '{db.port}', '{engine.urls}', '{nope.port}', '{{', '{', '}', 'x', '--port', ' '), { maxLength: 5 }).map((a) => a.join(''));

const service = fc.record(
  {
    command: fc.oneof(fc.array(fc.oneof(templ, scalar), { maxLength: 4 }), scalar),
    replicas: fc.oneof(fc.integer({ min: -1, max: 4 }), fc.constant('gpus'), scalar),
    nodes: fc.oneof(fc.constant('all'), fc.integer({ min: -1, max: 3 }), scalar),
    band: fc.oneof(fc.constantFrom('default', 'engines', 'missing'), scalar),
    port: fc.oneof(fc.integer({ min: 0, max: 70000 }), fc.constant('none'), scalar),
    range: fc.oneof(fc.constantFrom('20000-20099', '30000-29999', '1-65535', '0-5'), scalar),
    instance: fc.oneof(fc.integer({ min: -1, max: 12 }), scalar),
    host: fc.constantFrom('127.0.0.1', '::1', '0.0.0.0', 'localhost', '999.1.1.1', '', 'a b'),
    env: fc.oneof(fc.dictionary(fc.constantFrom('A', 'B_1', '1X', 'API_TOKEN', ''), fc.oneof(templ, scalar), { maxKeys: 3 }), scalar),
    cwd: fc.oneof(fc.constantFrom('.', 'sub', ''), scalar),
    handoff: fc.oneof(fc.constantFrom('release', 'fd'), scalar),
    ready: fc.oneof(fc.constantFrom('tcp', 'cmd:', 'cmd:true', 'http://127.0.0.1:{port}/health', 'https://x/', 'http://', 'http://{web.url}/'), templ, scalar),
    ready_timeout: fc.oneof(fc.constantFrom('0', '1ms', '10s', '600h', '99999999999999h', 'x'), scalar),
    depends_on: fc.oneof(fc.array(name, { maxLength: 3 }), fc.dictionary(name, fc.constantFrom('started', 'ready', 'completed', 'bogus'), { maxKeys: 3 }), scalar),
    restart: fc.oneof(fc.constantFrom('no', 'on-failure'), scalar),
    restart_limit: fc.oneof(fc.integer({ min: -1, max: 5 }), scalar),
    stop_grace: fc.oneof(fc.constantFrom('0', '10s', '600h'), scalar),
    job: fc.oneof(fc.boolean(), scalar),
    logs: fc.oneof(fc.constantFrom('file', 'attach'), scalar),
    bogus_key: scalar,
  },
  { requiredKeys: [] },
);

const stackLike = fc
  .record(
    {
      services: fc.oneof(fc.dictionary(name, service, { maxKeys: 4 }), fc.jsonValue({ maxDepth: 2 })),
      layout: fc.constantFrom('layout.yaml', 'missing.yaml', ''),
      bands: fc.constantFrom({ engines: { range: '20000-20399', window: 100 } }, { engines: '1-10', x: '5-6' }, null),
      'x-common': fc.jsonValue({ maxDepth: 1 }),
    },
    { requiredKeys: ['services'] },
  )
  // JSON is YAML; pretty-printed half the time so line numbers are exercised.
  .chain((s) => fc.constantFrom(JSON.stringify(s), JSON.stringify(s, null, 2)));

/**
 * Stacks written as a user would: one port source per service, placeholders of itself and of
 * its dependencies, dependencies on earlier services (now and then a later one: cycles). The
 * loader must accept them or explain the combination.
 */
const goodStack = fc
  .array(
    fc.record(
      {
        source: fc.oneof(fc.constant({}), fc.integer({ min: 20000, max: 20100 }).map((port) => ({ port })), fc.constant({ port: 'none' }), fc.constantFrom({ band: 'engines' }, { band: 'engines', instance: 2 }, { band: 'default' }), fc.constant({ range: '21000-21099' })),
        command: fc.array(fc.constantFrom('srv', '--port', '{port}', '{host}', '{{json}', '{name}', '{replica}'), { minLength: 1, maxLength: 4 }),
        replicas: fc.integer({ min: 1, max: 3 }),
        host: fc.constantFrom('127.0.0.1', '::1', '0.0.0.0'),
        handoff: fc.constantFrom('release', 'fd'),
        ready: fc.constantFrom(undefined, 'cmd:true', 'http://127.0.0.1:{port}/health'),
        ready_timeout: fc.constantFrom(undefined, '10s', '5m'),
        restart: fc.constantFrom(undefined, 'no', 'on-failure'),
        stop_grace: fc.constantFrom(undefined, '0', '10s'),
        job: fc.boolean(),
        logs: fc.constantFrom('file', 'attach'),
        dep: fc.option(fc.record({ back: fc.integer({ min: 1, max: 3 }), use: fc.boolean(), cond: fc.constantFrom('started', 'ready', 'completed') }), { freq: 2 }),
      },
      { requiredKeys: ['source', 'command', 'host', 'dep'] },
    ),
    { minLength: 1, maxLength: 4 },
  )
  .map((list) => {
    const names = ['web', 'db', 'engine', 'proxy'];
    const services: Record<string, unknown> = {};
    list.forEach((g, i) => {
      const { source, dep, ...rest } = g;
      const svc: Record<string, unknown> = { ...source, ...rest };
      for (const k of Object.keys(svc)) if (svc[k] === undefined) delete svc[k];
      if (dep) {
        // Mostly an earlier service; past the start it wraps to a later one (a cycle, or a self-loop).
        const other = names[(i - dep.back + list.length * 3) % list.length]!;
        svc.depends_on = { [other]: dep.cond };
        if (dep.use) svc.command = [...(svc.command as string[]), `{${other}.url}`];
      }
      services[names[i]!] = svc;
    });
    return JSON.stringify({ layout: 'layout.yaml', services }, null, 2);
  });

const stackTexts = fc.oneof(goodStack, goodStack, anyText(300), tokenSoup([...YAML_TOKENS, 'services:', 'command: [x]', 'depends_on: ', 'ready: ', '{port}', '{{']), stackLike, stackLike, fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)));

test('parseStack: any text gives a stack that keeps the loader promises, or exit 65 with file:line messages', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-prop-stack-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'layout.yaml'), 'bands:\n  engines: { range: 20000-20399, window: 100 }\n  default: 24000-24999\n');
  holds(
    stackTexts,
    (text) => {
      const r = outcome(() => parseStack(text, 's.yaml', dir), DATAERR);
      if (!r.ok) {
        const errors = (r.error.details?.errors as string[] | undefined) ?? [r.error.message];
        assert.ok(errors.length > 0);
        for (const e of errors) assert.match(e, /^(s|layout)\.yaml:\d+: \S|^\S+layout\.yaml:\d+: \S/, e);
        return;
      }
      const spec = r.value;
      assert.ok(spec.services.length > 0, 'a stack has at least one service');
      const names = new Set(spec.services.map((s) => s.name));
      assert.equal(names.size, spec.services.length);
      for (const s of spec.services) {
        assert.match(s.name, SERVICE_NAME_RE);
        assert.ok(s.command.length > 0);
        assert.ok(s.replicas === 'gpus' || (Number.isInteger(s.replicas) && s.replicas >= 1));
        for (const d of s.dependsOn) assert.ok(names.has(d.service) && d.service !== s.name, `${s.name} depends on ${d.service}`);
        if (s.source.kind === 'port') assert.ok(s.source.port >= 1 && s.source.port <= 65535);
        if (s.readyTimeoutMs !== undefined) assert.ok(s.readyTimeoutMs >= 1 && s.readyTimeoutMs <= 2 ** 31 - 1);
        assert.ok(s.stopGraceMs >= 0 && s.stopGraceMs <= 2 ** 31 - 1);
        if (s.ready?.kind === 'tcp') assert.notEqual(s.handoff, 'fd');
      }
      // No dependency cycle survives loading.
      const deps = new Map(spec.services.map((s) => [s.name, s.dependsOn.map((d) => d.service)]));
      const seen = new Map<string, number>();
      const visit = (n: string): void => {
        if (seen.get(n) === 2) return;
        assert.notEqual(seen.get(n), 1, `cycle through ${n}`);
        seen.set(n, 1);
        for (const m of deps.get(n) ?? []) visit(m);
        seen.set(n, 2);
      };
      for (const n of names) visit(n);
    },
    { seed: 6601, numRuns: 400 },
  );
});

test('regression: a deeply nested stack is refused (65), however often it is parsed', () => {
  const text = 'services:\n  a:\n    command: ' + '['.repeat(2000) + ']'.repeat(2000) + '\n';
  for (let i = 0; i < 3; i++) {
    const r = outcome(() => parseStack(text, 's.yaml', tmpdir()), DATAERR);
    assert.ok(!r.ok);
    assert.match(r.error.message, /^s\.yaml:3: brackets nested more than 100 levels deep; a stack is a few levels deep/);
  }
});
