/**
 * The published JSON Schemas (schema/stack.schema.json, schema/layout.schema.json) against
 * berth's own readers, so an editor never underlines a file berth runs nor stays silent on a
 * shape berth refuses:
 *   - every stack and layout file of examples/ (the reader accepts each), test/fixtures/ and
 *     the docs' yaml blocks that the reader accepts is valid under the schema;
 *   - the schema knows exactly the keys the reader knows (its tables, or its own
 *     "allowed keys" message), and every example and default it shows is accepted by both;
 *   - files the reader refuses for their shape (a wrong type, an unknown key) are refused by
 *     the schema too;
 *   - each stack file of examples/ names the schema on its first line, and every such
 *     modeline points at the schema file of its kind.
 * Ajv (a devDependency) validates; berth itself never loads the schemas.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { after, test } from 'node:test';
import { Ajv, type ValidateFunction } from 'ajv';
import { isMap, parseDocument } from 'yaml';
import { BerthError } from '../src/errors.js';
import { parseLayout } from '../src/layout/parse.js';
import { parseStack, SERVICE_KEYS } from '../src/stack/index.js';
import { SERVICE_CHOICES } from '../src/stack/file/service-fields.js';

type Kind = 'stack' | 'layout';
type Json = Record<string, unknown>;

const ROOT = resolve(import.meta.dirname, '..');
const SCHEMA_FILES: Record<Kind, string> = { stack: join(ROOT, 'schema/stack.schema.json'), layout: join(ROOT, 'schema/layout.schema.json') };
const readJson = (file: string): Json => JSON.parse(readFileSync(file, 'utf8')) as Json;
const STACK_SCHEMA = readJson(SCHEMA_FILES.stack);
const LAYOUT_SCHEMA = readJson(SCHEMA_FILES.layout);

// Strict mode (the default) also refuses unknown keywords and loose types in the schemas themselves.
const ajv = new Ajv({ allErrors: true, allowUnionTypes: true });
ajv.addSchema(LAYOUT_SCHEMA, 'layout.schema.json');
const VALIDATE: Record<Kind, ValidateFunction> = { stack: ajv.compile(STACK_SCHEMA), layout: ajv.getSchema('layout.schema.json')! };

const dir = mkdtempSync(join(tmpdir(), 'berth-schema-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The reader's verdict: undefined when it accepts the text, else its messages. */
function readerProblems(kind: Kind, text: string, file: string, baseDir: string): string[] | undefined {
  try {
    if (kind === 'stack') parseStack(text, file, baseDir);
    else parseLayout(text, file);
    return undefined;
  } catch (e) {
    if (!(e instanceof BerthError)) throw e;
    return (e.details?.errors as string[] | undefined) ?? [e.message];
  }
}

/** The schema's verdict on the YAML as editors see it (merge keys resolved): undefined when valid. */
function schemaProblems(kind: Kind, text: string): string[] | undefined {
  const doc = parseDocument(text, { merge: true, uniqueKeys: false });
  if (doc.errors.length > 0) return doc.errors.map((e) => e.message);
  const validate = VALIDATE[kind];
  if (validate(doc.toJS({ maxAliasCount: -1 }))) return undefined;
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
}

/** A stack or a layout, by what its top level holds; undefined for neither (or unreadable YAML). */
function kindOf(text: string, file: string): Kind | undefined {
  const doc = parseDocument(text, { uniqueKeys: false });
  if (doc.errors.length === 0 && isMap(doc.contents)) {
    if (doc.contents.has('services')) return 'stack';
    if (doc.contents.has('bands')) return 'layout';
  }
  return /layout/.test(file) ? 'layout' : /stack/.test(file) ? 'stack' : undefined;
}

function filesUnder(top: string, ext: RegExp): string[] {
  return (readdirSync(join(ROOT, top), { recursive: true }) as string[]).filter((f) => ext.test(f)).map((f) => join(top, f)).sort();
}

interface Sample {
  where: string;
  kind: Kind;
  text: string;
  baseDir: string;
}

const YAML_FILE = /\.(ya?ml|json)$/;
const fileSample = (f: string): Sample | undefined => {
  const text = readFileSync(join(ROOT, f), 'utf8');
  const kind = kindOf(text, f);
  return kind && { where: f, kind, text, baseDir: dirname(join(ROOT, f)) };
};
const EXAMPLES = filesUnder('examples', YAML_FILE).flatMap((f) => fileSample(f) ?? []);
const FIXTURES = filesUnder('test/fixtures', YAML_FILE).flatMap((f) => fileSample(f) ?? []);

/** The ```yaml blocks of the README and docs that hold a stack or a layout. */
const DOC_BLOCKS: Sample[] = ['README.md', ...filesUnder('docs', /\.md$/), ...filesUnder('examples', /\.md$/)].flatMap((doc) => {
  const text = readFileSync(join(ROOT, doc), 'utf8');
  return [...text.matchAll(/^```yaml\b.*\n([\s\S]*?)^```/gm)].flatMap((m) => {
    const kind = kindOf(m[1]!, '');
    const line = text.slice(0, m.index).split('\n').length;
    return kind ? [{ where: `${doc}:${line}`, kind, text: m[1]!, baseDir: dirname(join(ROOT, doc)) }] : [];
  });
});

test('every stack and layout file of examples/ is accepted by berth and valid under its schema', () => {
  assert.ok(EXAMPLES.filter((s) => s.kind === 'stack').length > 0 && EXAMPLES.some((s) => s.kind === 'layout'), 'no example found');
  for (const s of EXAMPLES) {
    assert.equal(readerProblems(s.kind, s.text, s.where, s.baseDir), undefined, `${s.where}: refused by berth`);
    assert.equal(schemaProblems(s.kind, s.text), undefined, `${s.where}: refused by ${relative(ROOT, SCHEMA_FILES[s.kind])}`);
  }
});

for (const [what, samples] of [['test/fixtures/', FIXTURES], ['the docs\' yaml blocks', DOC_BLOCKS]] as const) {
  test(`every stack and layout of ${what} that berth accepts is valid under its schema`, (t) => {
    const accepted = samples.filter((s) => readerProblems(s.kind, s.text, s.where, s.baseDir) === undefined);
    assert.ok(accepted.length > 0, `no file of ${what} is accepted by berth`);
    t.diagnostic(`${accepted.length} of ${samples.length} accepted by berth, each valid under its schema`);
    for (const s of accepted) assert.deepEqual(schemaProblems(s.kind, s.text), undefined, `${s.where} (${s.kind})`);
  });
}

const MODELINE = /^# yaml-language-server: \$schema=(\S+)$/;

test('each stack file of examples/ names the stack schema on its first line; every modeline points at its kind\'s schema', () => {
  for (const s of EXAMPLES.filter((x) => x.kind === 'stack')) assert.match(s.text.split('\n')[0]!, MODELINE, `${s.where}: no modeline on line 1`);
  const withModeline = [...EXAMPLES, ...FIXTURES].flatMap((s) => {
    const m = MODELINE.exec(s.text.split('\n')[0]!);
    return m ? [{ ...s, target: resolve(s.baseDir, m[1]!) }] : [];
  });
  assert.ok(withModeline.length > 0);
  for (const s of withModeline) assert.equal(s.target, SCHEMA_FILES[s.kind], `${s.where}: the modeline points at ${s.target}`);
});

// --- The keys the reader knows -----------------------------------------------------------

const props = (schema: unknown): string[] => Object.keys((schema as { properties: Json }).properties).sort();
const defs = STACK_SCHEMA.definitions as Record<string, Json>;
const quoted = (text: string): string[] => [...text.matchAll(/"([^"]+)"/g)].map((m) => m[1]!);

/** The reader's "allowed keys" list, from its message for an unknown key. */
function allowedKeys(kind: Kind, text: string, marker: RegExp): string[] {
  const problems = readerProblems(kind, text, 'k.yaml', dir) ?? [];
  const line = problems.find((p) => marker.test(p));
  assert.ok(line, `no "allowed keys" message in ${JSON.stringify(problems)}`);
  const list = line.slice(line.search(marker)).replace(marker, '');
  // "x-…" (for anchors) is the schemas' patternProperties, checked below.
  return (list.includes('"') ? quoted(list) : list.trim().split(', ')).filter((k) => !k.startsWith('x-')).sort();
}

test('the schemas have a property for every key the readers know, and none else', () => {
  const stackTop = allowedKeys('stack', 'zz: 1\nservices: { a: { command: [a] } }\n', /allowed keys are/);
  assert.deepEqual(props(STACK_SCHEMA), stackTop);
  assert.deepEqual(props(defs.service), [...SERVICE_KEYS].sort());
  assert.deepEqual(props(defs.service), allowedKeys('stack', 'services: { a: { command: [a], zz: 1 } }\n', /allowed keys:/));
  assert.deepEqual(props(LAYOUT_SCHEMA), allowedKeys('layout', 'zz: 1\nbands: {}\n', /key allowed is/));
  const band = (LAYOUT_SCHEMA.definitions as Record<string, { anyOf: Json[] }>).band!.anyOf.find((s) => s.type === 'object');
  assert.deepEqual(props(band), allowedKeys('layout', 'bands: { a: { range: 20000-20099, zz: 1 } }\n', /allowed keys are/));
  // "x-" keys: ignored at the top level of both, as the schemas' patternProperties say.
  const withX = [
    ['stack', STACK_SCHEMA, 'x-a: &a [1]\nservices: { a: { command: [a] } }\n'],
    ['layout', LAYOUT_SCHEMA, 'x-a: 1\nbands: {}\n'],
  ] as const;
  for (const [kind, schema, text] of withX) {
    assert.deepEqual(Object.keys(schema.patternProperties as Json), ['^x-']);
    assert.equal(readerProblems(kind, text, 'x.yaml', dir), undefined);
    assert.equal(schemaProblems(kind, text), undefined);
  }
});

test("the schema's words for a key of few choices are the reader's table, each accepted by both and a neighbour refused by both", () => {
  const service = (defs.service as { properties: Record<string, Json> }).properties;
  const keys = Object.keys(SERVICE_CHOICES);
  assert.deepEqual(keys.sort(), ['handoff', 'job', 'logs', 'restart', 'strict']);
  for (const [key, choices] of Object.entries(SERVICE_CHOICES)) {
    const prop = service[key]!;
    if (choices!.every((c) => typeof c === 'boolean')) assert.equal(prop.type, 'boolean', key);
    else assert.deepEqual(prop.enum, choices, key);
    for (const c of choices!) {
      const text = `services: { a: { command: [a], ${key}: ${JSON.stringify(c)} } }\n`;
      assert.equal(readerProblems('stack', text, 'c.yaml', dir), undefined, text);
      assert.equal(schemaProblems('stack', text), undefined, text);
    }
    const wrong = `services: { a: { command: [a], ${key}: "${String(choices![0])}x" } }\n`;
    assert.match((readerProblems('stack', wrong, 'c.yaml', dir) ?? []).join('\n'), new RegExp(`${key} must be`), wrong);
    assert.notEqual(schemaProblems('stack', wrong), undefined, wrong);
  }
});

// --- What the schema shows, accepted by both ---------------------------------------------

writeFileSync(join(dir, 'nginx.conf.mustache'), 'listen {{port}};\n');
writeFileSync(join(dir, 'layout.yaml'), 'bands: { engines: { range: 20000-20799, window: 100 } }\n');
const BANDS = { engines: { range: '20000-20799', window: 100 } };

/** A stack of service `a` with `settings`, beside a service db and the band engines. */
const stackWith = (settings: Json, top: Json = { bands: BANDS }): string =>
  `${JSON.stringify({ ...top, services: { db: { command: ['db'] }, a: { command: ['a'], ...settings } } })}\n`;

/** What a key's value needs beside it in the service to be accepted at all. */
const COMPANIONS: Record<string, Json> = { instance: { band: 'engines' }, restart_limit: { restart: 'on-failure' }, ports: { band: 'engines' } };

function bothAccept(kind: Kind, text: string, what: string): void {
  assert.equal(readerProblems(kind, text, 's.yaml', dir), undefined, `${what}: refused by berth`);
  assert.equal(schemaProblems(kind, text), undefined, `${what}: refused by the schema`);
}

test('every example and default a service key shows in the editor is accepted by berth and by the schema', () => {
  bothAccept('stack', stackWith({}), 'the stack the cases below start from');
  let n = 0;
  for (const [key, schema] of Object.entries((defs.service as { properties: Record<string, Json> }).properties)) {
    assert.ok(typeof schema.title === 'string' && typeof schema.description === 'string', `${key}: no title or description`);
    const values = [...((schema.examples as unknown[] | undefined) ?? []), ...('default' in schema ? [schema.default] : [])];
    for (const v of values) {
      bothAccept('stack', stackWith({ ...COMPANIONS[key], [key]: v }), `${key}: ${JSON.stringify(v)}`);
      n++;
    }
  }
  const entry = defs.portEntry as { examples: unknown[]; anyOf: Json[] };
  for (const v of entry.examples) bothAccept('stack', stackWith({ band: 'engines', ports: { p: 1, x: v } }), `ports entry ${JSON.stringify(v)}`);
  // Every key of a port entry's mappings is in some example.
  const entryKeys = entry.anyOf.flatMap((s) => (s.properties ? Object.keys(s.properties) : [])).sort();
  assert.deepEqual([...new Set(entry.examples.flatMap((v) => (typeof v === 'object' && v ? Object.keys(v) : [])))].sort(), entryKeys);
  for (const [key, schema] of Object.entries(STACK_SCHEMA.properties as Record<string, Json>)) {
    const values = [...((schema.examples as unknown[] | undefined) ?? []), ...('default' in schema ? [schema.default] : [])];
    for (const v of values) bothAccept('stack', stackWith({}, { [key]: v }), `top-level ${key}: ${JSON.stringify(v)}`);
  }
  const bands = (LAYOUT_SCHEMA.definitions as Record<string, Json>).bands!;
  for (const v of bands.examples as unknown[]) bothAccept('layout', `${JSON.stringify({ bands: v })}\n`, `bands ${JSON.stringify(v)}`);
  assert.ok(n > SERVICE_KEYS.length, `only ${n} examples`);
});

// --- Shapes the reader refuses, refused by the schema too --------------------------------

function bothRefuse(kind: Kind, text: string, what: string): void {
  assert.notEqual(readerProblems(kind, text, 's.yaml', dir), undefined, `${what}: accepted by berth`);
  assert.notEqual(schemaProblems(kind, text), undefined, `${what}: accepted by the schema`);
}

test('a mapping where a key wants a value, and an unknown key, are refused by both', () => {
  const nested = { zz: { zz: 1 } };
  for (const key of SERVICE_KEYS) bothRefuse('stack', stackWith({ ...COMPANIONS[key], [key]: nested }), `service key ${key}`);
  for (const key of ['layout', 'strict']) bothRefuse('stack', stackWith({}, { [key]: nested }), `top-level ${key}`);
  bothRefuse('stack', '{ services: [a] }\n', 'services as a list');
  bothRefuse('stack', '{ services: a }\n', 'services as text');
  bothRefuse('stack', stackWith({}, { bands: [BANDS] }), 'bands as a list');
  bothRefuse('stack', stackWith({ replica: 2 }), 'service key "replica"');
  bothRefuse('stack', stackWith({ 'x-note': 1 }), 'an "x-" key inside a service');
  bothRefuse('stack', stackWith({}, { servics: {} }), 'top-level "servics"');
  bothRefuse('layout', '{ bands: { a: { range: 20000-20099, windw: 3 } } }\n', 'band key "windw"');
});

// Each refused by the reader for its shape; the schema must say no as well.
const REFUSED_SERVICES: [string, Json][] = [
  ['command as text', { command: 'node server.js' }],
  ['an empty command', { command: [] }],
  ['a list inside command', { command: ['srv', ['x']] }],
  ['replicas 0', { replicas: 0 }],
  ['replicas many', { replicas: 'many' }],
  ['nodes 0', { nodes: 0 }],
  ['port 70000', { port: 70000 }],
  ['a range without a dash', { range: '8000' }],
  ['instance -1', { band: 'engines', instance: -1 }],
  ['instance without band', { instance: 1 }],
  ['band and port', { band: 'engines', port: 8000 }],
  ['port and range', { port: 8000, range: '9000-9010' }],
  ['port: learn with ports', { port: 'learn', ports: { http: 1 } }],
  ['ports: {}', { ports: {} }],
  ['a port entry of 2', { ports: { a: 2 } }],
  ['a block of 4097', { ports: { a: 1, b: { block: 4097 } } }],
  ['udp with block', { ports: { a: { udp: true, block: 2 } } }],
  ['learn with shared', { ports: { a: { learn: 'on (\\d+)', shared: true } } }],
  ['generations without shared', { ports: { a: 1, b: { block: 2, generations: 'keep' } } }],
  ['generations: always', { job: true, replicas: 2, ports: { a: { shared: true, generations: 'always' } } }],
  ['a shared window', { band: 'engines', ports: { a: 1, b: { block: 'window', shared: true } } }],
  ['{ shared: false } alone', { ports: { a: { shared: false } } }],
  ['a port name starting with a digit', { ports: { '1a': 1 } }],
  ['host localhost', { host: 'localhost' }],
  ['env name 1BAD', { env: { '1BAD': 'x' } }],
  ['an env value that is a list', { env: { A: [1] } }],
  ['an empty env value', { env: { A: null } }],
  ['templates: {}', { templates: {} }],
  ['an empty cwd', { cwd: '' }],
  ['handoff socket', { handoff: 'socket' }],
  ['ready https', { ready: 'https://127.0.0.1:{port}/health' }],
  ['ready nope', { ready: 'nope' }],
  ['ready "cmd:"', { ready: 'cmd:' }],
  ['ready tcp with handoff fd', { handoff: 'fd', ready: 'tcp' }],
  ['ready_timeout soon', { ready_timeout: 'soon' }],
  ['ready_timeout 0', { ready_timeout: 0 }],
  ['stop_grace -1', { stop_grace: -1 }],
  ['depends_on healthy', { depends_on: { db: 'healthy' } }],
  ['depends_on a number', { depends_on: ['db', 7] }],
  ['depends_on a text', { depends_on: 'db' }],
  ['restart false', { restart: false }],
  ['restart always', { restart: 'always' }],
  ['restart_limit without restart', { restart_limit: 2 }],
  ['restart_limit -1', { restart: 'on-failure', restart_limit: -1 }],
  ['job yes', { job: 'yes' }],
  ['logs tail', { logs: 'tail' }],
  ['strays []', { strays: [] }],
  ['strays nope', { strays: ['ephemeral', 'nope'] }],
  ['scheme postgresql://', { scheme: 'postgresql://' }],
  ['scheme 9redis', { scheme: '9redis' }],
  ['dir_owner a:b:c', { dir_owner: 'a:b:c' }],
  ['strict 1', { strict: 1 }],
];

test('wrong types and values, refused by berth for their shape, are refused by the schema', () => {
  bothAccept('stack', stackWith({}), 'the stack the cases start from');
  for (const [what, settings] of REFUSED_SERVICES) bothRefuse('stack', stackWith(settings), what);
  const services = { a: { command: ['a'] } };
  for (const [what, text] of [
    ['services: {}', '{ services: {} }'],
    ['services: null', 'services:'],
    ['a service without settings', '{ services: { a: null } }'],
    ['a service as a list', '{ services: { a: [srv] } }'],
    ['a service without command', '{ services: { a: { job: true } } }'],
    ['the service name "bad name"', '{ services: { "bad name": { command: [x] } } }'],
    ['the service name "ports"', '{ services: { ports: { command: [x] } } }'],
    ['layout and bands', `${JSON.stringify({ layout: './layout.yaml', bands: BANDS, services })}`],
    ['an empty layout', `${JSON.stringify({ layout: '', services })}`],
    ['strict yes', `${JSON.stringify({ strict: 'yes', services })}`],
    ['a list at the top', '[a, b]'],
    ['an empty file', '# nothing'],
  ]) bothRefuse('stack', `${text}\n`, what);
  for (const [what, text] of [
    ['a band name in capitals', '{ bands: { Engines: { range: 20000-20099 } } }'],
    ['a band without range', '{ bands: { a: { window: 10 } } }'],
    ['a range of words', '{ bands: { a: { range: twenty } } }'],
    ['a range past 65535', '{ bands: { a: { range: 60000-70000 } } }'],
    ['a range as a list', '{ bands: { a: { range: [1, 2] } } }'],
    ['a window of 0', '{ bands: { a: { range: 20000-20099, window: 0 } } }'],
    ['a window of 1.5', '{ bands: { a: { range: 20000-20099, window: 1.5 } } }'],
    ['a band without value', '{ bands: { a: null } }'],
    ['a band as a list', '{ bands: { a: [1, 2] } }'],
    ['bands as a list', 'bands: [{ engines: { range: 20000-20799 } }]'],
    ['no bands', '{ band: { a: 20000-20099 } }'],
    ['an unknown top-level key', '{ bands: {}, version: 2 }'],
  ]) bothRefuse('layout', `${text}\n`, what);
});

test('the fixtures refused for their shape are refused by the schema too', () => {
  const shapes = [
    'test/fixtures/stacks/bad-keys.yaml', 'test/fixtures/stacks/bad-top.yaml', 'test/fixtures/stacks/bad-list.yaml',
    'test/fixtures/stacks/bad-no-services.yaml',
    'test/fixtures/stacks/bad-empty.yaml', 'test/fixtures/stacks/bad-deps.yaml', 'test/fixtures/stacks/servers/bad-servers.yaml',
    'test/fixtures/layouts/bad-top-keys.yaml', 'test/fixtures/layouts/bad-top-list.yaml', 'test/fixtures/layouts/bad-bands-list.yaml',
    'test/fixtures/layouts/bad-no-bands.yaml', 'test/fixtures/layouts/bad-many.yaml', 'test/fixtures/layouts/bad-empty.yaml',
  ];
  for (const f of shapes) {
    const kind = f.includes('/layouts/') ? 'layout' : 'stack';
    bothRefuse(kind, readFileSync(join(ROOT, f), 'utf8'), f);
  }
});
