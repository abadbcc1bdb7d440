/**
 * One checker for what a replica's text names: a placeholder ({db.port.api}) and a config
 * template's tag ({{db.ports.api.port}}) are held to the same rules at load
 * (src/stack/file/reference-rules.ts): a service named must be a dependency with a port, and
 * a learned port must be known by the time the text is filled. Each case is written both
 * ways, and both get the same verdict with the same reason.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { BerthError } from '../src/errors.js';
import { parseStack } from '../src/stack/index.js';

const dir = mkdtempSync(join(tmpdir(), 'berth-references-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The problems of a stack whose service "web" names something as `placeholder` in env, or as `tag` in a template. */
function problems(services: string, web: string, form: { placeholder: string } | { tag: string }): string[] {
  let uses: string;
  if ('placeholder' in form) uses = `env: { X: "${form.placeholder}" }`;
  else {
    writeFileSync(join(dir, 'web.conf.mustache'), `x = ${form.tag}\n`);
    uses = 'templates: { conf: ./web.conf.mustache }';
  }
  const text = `services:\n${services}  web: { command: [sleep, "1"], ${web}${web ? ', ' : ''}${uses} }\n`;
  try {
    parseStack(text, 'refs.yaml', dir);
    return [];
  } catch (e) {
    if (!(e instanceof BerthError)) throw e;
    return (e.details?.errors as string[] | undefined) ?? [e.message];
  }
}

/** The reason after "uses X", the same whichever form the text is written in. */
const reason = (line: string) => line.replace(/^.* uses \{\{?[^}]*\}\}?/, '');

const LEARNER = '  db: { command: [sleep, "1"], ports: { api: learn }, ready: "cmd:true" }\n';

test("a dependency's learned port named while it is only started: refused in a placeholder and a tag alike", () => {
  const p = problems(LEARNER, 'depends_on: { db: started }', { placeholder: '{db.port.api}' });
  const t = problems(LEARNER, 'depends_on: { db: started }', { tag: '{{db.ports.api.port}}' });
  assert.equal(p.length, 1, p.join('\n'));
  assert.equal(t.length, 1, t.join('\n'));
  assert.match(p[0]!, /env X uses \{db\.port\.api\}, but "api" is a port db chooses itself \(learn\), known once it is ready/);
  assert.match(t[0]!, /template "conf": .*web\.conf\.mustache:1 uses \{\{db\.ports\.api\.port\}\}, but "api" is a port db chooses/);
  assert.equal(reason(t[0]!), reason(p[0]!));
  // Waiting for ready, the port is known: both are accepted.
  assert.deepEqual(problems(LEARNER, 'depends_on: { db: ready }', { placeholder: '{db.port.api}' }), []);
  assert.deepEqual(problems(LEARNER, 'depends_on: { db: ready }', { tag: '{{db.ports.api.port}}' }), []);
});

test("a replica's own learned port: refused in its env and its templates alike, with the same reason", () => {
  const own = 'ports: { api: learn }';
  const p = problems('', own, { placeholder: '{ports.api}' });
  const t = problems('', own, { tag: '{{ports.api.port}}' });
  assert.equal(p.length, 1, p.join('\n'));
  assert.equal(t.length, 1, t.join('\n'));
  assert.match(t[0]!, /uses \{\{ports\.api\.port\}\}, but "api" is a port web chooses itself \(learn\): it is known only once the replica listens/);
  assert.equal(reason(t[0]!), reason(p[0]!));
  // Its first port, by the one-value forms.
  assert.equal(reason(problems('', own, { tag: '{{port}}' })[0] ?? ''), reason(p[0]!));
  assert.equal(reason(problems('', own, { placeholder: '{port}' })[0] ?? ''), reason(p[0]!));
  // Inside a dependency's section, {{port}} is the dependency's replica's, not its own.
  const dep = '  db: { command: [sleep, "1"] }\n';
  assert.deepEqual(problems(dep, `${own}, depends_on: [db]`, { tag: '{{#db.replicas}}{{port}}{{/db.replicas}}' }), []);
  // ... so it is judged as the dependency's: a learned one while it is only started is refused there too.
  const loop = (name: string) => ({ tag: `{{#db.replicas}}{{${name}}}{{/db.replicas}}` });
  for (const name of ['port', 'ports.api.port', 'hostport']) {
    const inLoop = problems(LEARNER, 'depends_on: { db: started }', loop(name));
    assert.equal(inLoop.length, 1, `${name}: ${inLoop.join('\n')}`);
    assert.match(inLoop[0]!, new RegExp(`uses \\{\\{${name.replace(/\./g, '\\.')}\\}\\}, but "api" is a port db chooses itself \\(learn\\), known once it is ready`));
    assert.deepEqual(problems(LEARNER, 'depends_on: { db: ready }', loop(name)), [], name);
  }
  assert.deepEqual(problems(LEARNER, 'depends_on: { db: started }', loop('name')), [], 'a replica\'s name is known before it is ready');
});

test('a service that is not a dependency, or has no port: refused in both forms, for the same reason', () => {
  const other = '  db: { command: [sleep, "1"] }\n';
  const p = problems(other, '', { placeholder: '{db.url}' });
  const t = problems(other, '', { tag: '{{db.url}}' });
  assert.match(p[0] ?? '', /uses \{db\.url\}, but "db" is not in its depends_on; add depends_on: \{ db: ready \}/);
  assert.match(t[0] ?? '', /uses \{\{db…\}\}, which is not in its depends_on; add depends_on: \{ db: ready \}/);
  const portless = '  db: { command: [sleep, "1"], port: none }\n';
  const p2 = problems(portless, 'depends_on: [db]', { placeholder: '{db.url}' });
  const t2 = problems(portless, 'depends_on: [db]', { tag: '{{db.url}}' });
  assert.match(p2[0] ?? '', /uses \{db\.url\}, but "db" has no port \("port: none"\)/);
  assert.match(t2[0] ?? '', /uses \{\{db…\}\}, which has no port \("port: none"\)/);
});

test('a service named like a template field and the replica\'s own learned port: two problems of one name, both reported', () => {
  const named = '  port: { command: [sleep, "1"] }\n';
  const t = problems(named, 'ports: { api: learn }, depends_on: [port]', { tag: '{{port}} {{port.x}}' });
  assert.equal(t.length, 2, t.join('\n'));
  assert.match(t.join('\n'), /uses \{\{port\}\}, but "api" is a port web chooses itself/);
  assert.match(t.join('\n'), /uses \{\{port\.x\}\}, but "port" is a field of every template/);
});
