import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseLayout } from '../src/layout/index.js';
import { parseStack, type ServiceSpec, type StackSpec } from '../src/stack/index.js';
import { dataErrors } from './helpers/refusal.js';

// YAML merge keys (`<<: *a`, `<<: [*a, *b]`) in stack and layout files, and where their errors point.

const stack = (text: string): StackSpec => parseStack(text, 'stack.yaml', '/tmp');
const stackErrors = (text: string): string[] => dataErrors('stack.yaml', () => stack(text));
const layoutErrors = (text: string): string[] => dataErrors('layout.yaml', () => parseLayout(text, 'layout.yaml'));
const svc = (s: StackSpec, name: string): ServiceSpec => {
  const found = s.services.find((x) => x.name === name);
  assert.ok(found, `no service ${name}`);
  return found;
};

test('stack: a service merges an anchored mapping; its own keys win', () => {
  const s = stack(`x-common: &common
  env: { MODEL: tiny, LOG: info }
  ready: tcp
  ready_timeout: 45s
  restart: on-failure
services:
  a:
    <<: *common
    command: [sleep, "1"]
  b:
    <<: *common
    ready_timeout: 5s
    command: [sleep, "2"]
`);
  for (const name of ['a', 'b']) {
    assert.deepEqual(svc(s, name).env, { MODEL: 'tiny', LOG: 'info' });
    assert.deepEqual(svc(s, name).ready, { kind: 'tcp' });
    assert.equal(svc(s, name).restart.policy, 'on-failure');
  }
  assert.equal(svc(s, 'a').readyTimeoutMs, 45_000);
  assert.equal(svc(s, 'b').readyTimeoutMs, 5_000);
});

test('stack: env merges a list of mappings; written keys win, then earlier mappings over later ones', () => {
  const s = stack(`x-base: &base { A: base, B: base, C: base }
x-gpu: &gpu { B: gpu, D: gpu }
services:
  a:
    command: [sleep, "1"]
    env:
      <<: [*gpu, *base]
      C: own
`);
  assert.deepEqual(svc(s, 'a').env, { B: 'gpu', D: 'gpu', A: 'base', C: 'own' });
});

test('stack: whole services merged from an anchor keep their order and names', () => {
  const s = stack(`x-pair: &pair
  one: { command: [sleep, "1"] }
  two: { command: [sleep, "2"] }
services:
  <<: *pair
  three: { command: [sleep, "3"] }
`);
  assert.deepEqual(s.services.map((x) => x.name), ['one', 'two', 'three']);
});

test('stack: a merged mapping that itself merges is expanded too', () => {
  const s = stack(`x-a: &a { A: "1" }
x-b: &b { <<: *a, B: "2" }
services:
  s:
    command: [sleep, "1"]
    env: { <<: *b, C: "3" }
`);
  assert.deepEqual(svc(s, 's').env, { C: '3', B: '2', A: '1' });
});

test('stack: an error inside merged content names the line where it is written', () => {
  assert.deepEqual(
    stackErrors(`x-common: &common
  env: { A: "1" }
  ready_timout: 5s
services:
  a:
    <<: *common
    command: [sleep, "1"]
`),
    [
      `stack.yaml:3: service "a": unknown key "ready_timout" (did you mean "ready_timeout"?); allowed keys: command, replicas, nodes, band, port, ports, range, instance, host, env, templates, cwd, handoff, ready, ready_timeout, depends_on, restart, restart_limit, stop_grace, job, logs, strays, scheme, dir_owner, strict`,
    ],
  );
  assert.deepEqual(
    stackErrors(`x-env: &env
  GOOD: "1"
  "9bad": x
services:
  a: { command: [sleep, "1"], env: { <<: *env } }
`),
    [`stack.yaml:3: service "a": env name "9bad" is not a variable name (letters, digits and "_", not starting with a digit)`],
  );
});

test('stack: "<<" with an unknown alias or a non-mapping is refused at its line', () => {
  assert.deepEqual(stackErrors(`services:\n  a:\n    <<: *nope\n    command: [sleep, "1"]\n`), [
    `stack.yaml:3: "<<": alias *nope has no matching &nope anchor`,
  ]);
  assert.deepEqual(stackErrors(`x-a: &a hello\nservices:\n  a:\n    <<: [*a]\n    command: [sleep, "1"]\n`), [
    `stack.yaml:4: "<<" merges mappings: write "<<: *NAME" or "<<: [*A, *B]" naming mappings anchored with &NAME, found the text "hello"`,
  ]);
  assert.deepEqual(stackErrors(`x-a: &a { <<: *a }\nservices:\n  a: { command: [sleep, "1"] }\n`), [
    `stack.yaml:1: "<<": the mapping *a merges itself (it contains this "<<"); merge it from outside instead`,
  ]);
});

test('stack: a quoted "<<" is a plain key, not a merge', () => {
  assert.deepEqual(stackErrors(`x-e: &e { A: "1" }\nservices:\n  a:\n    command: [sleep, "1"]\n    env: { "<<": *e }\n`), [
    `stack.yaml:5: service "a": env name "<<" is not a variable name (letters, digits and "_", not starting with a digit)`,
  ]);
});

test('stack: inline bands may merge an anchor written elsewhere in the stack', () => {
  const s = stack(`x-window: &w { window: 10 }
bands:
  eng: { <<: *w, range: 20000-20099 }
services:
  a: { command: [sleep, "1"], band: eng, replicas: 2 }
`);
  assert.deepEqual(s.layout?.bands.map((b) => [b.name, b.lo, b.hi, b.window]), [['eng', 20000, 20099, 10]]);
  // Anchors inside the bands themselves keep exact lines.
  const t = stack(`bands:
  eng: &e { range: 20000-20099, window: 10 }
  web: { <<: *e, range: 21000-21099 }
services:
  a: { command: [sleep, "1"], band: web }
`);
  assert.deepEqual(t.layout?.bands.map((b) => [b.name, b.lo, b.hi, b.window, b.line]), [
    ['eng', 20000, 20099, 10, 2],
    ['web', 21000, 21099, 10, 3],
  ]);
});

test('layout: bands merge anchored settings (x- keys hold the anchors)', () => {
  const l = parseLayout(
    `x-engine: &engine { window: 100 }
bands:
  engines: { <<: *engine, range: 20000-20799 }
  gen: &gen { range: 21000-21399, window: 50 }
  gen2: { <<: [*gen, *engine], range: 22000-22399 }
`,
    'layout.yaml',
  );
  assert.deepEqual(l.bands.map((b) => [b.name, b.lo, b.hi, b.window, b.line]), [
    ['engines', 20000, 20799, 100, 3],
    ['gen', 21000, 21399, 50, 4],
    ['gen2', 22000, 22399, 50, 5],
  ]);
});

test('layout: errors in merged content and bad merges name their lines', () => {
  assert.deepEqual(
    layoutErrors(`x-engine: &engine
  windw: 100
bands:
  engines: { <<: *engine, range: 20000-20799 }
`),
    [`layout.yaml:2: band "engines": unknown key "windw" (did you mean "window"?); allowed keys are "range" and "window"`],
  );
  assert.deepEqual(layoutErrors(`bands:\n  a: { <<: *gone, range: 20000-20099 }\n`), [`layout.yaml:2: "<<": alias *gone has no matching &gone anchor`]);
  assert.deepEqual(layoutErrors(`x-r: &r [1, 2]\nbands:\n  a: { <<: *r, range: 20000-20099 }\n`), [
    `layout.yaml:3: "<<" merges mappings: write "<<: *NAME" or "<<: [*A, *B]" naming mappings anchored with &NAME, found a list`,
  ]);
});
