import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BerthError, EXIT } from '../src/errors.js';
import { endpointUrl, parseTemplate, placeholdersOf, resolveTemplate, type Endpoint, type ReplicaContext } from '../src/stack/index.js';

const endpoints = new Map<string, Endpoint[]>([
  ['engine', [{ host: '127.0.0.1', port: 20000 }, { host: '127.0.0.1', port: 20100 }]],
  ['proxy', [{ host: '127.0.0.1', port: 21000 }]],
  ['v6', [{ host: '::1', port: 22000 }]],
  ['wild', [{ host: '0.0.0.0', port: 23000 }, { host: '::', port: 23001 }]],
]);
const ctx: ReplicaContext = { name: 'client', replica: 1, replicas: 2, host: '127.0.0.1', port: 30000, endpoints };

test('own placeholders: {port} {replica} {name} {host}', () => {
  assert.equal(resolveTemplate('--port={port}', ctx), '--port=30000');
  assert.equal(resolveTemplate('{name}-{replica}', ctx), 'client-1');
  assert.equal(resolveTemplate('{host}:{port}', { ...ctx, host: '::1' }), '::1:30000');
  assert.equal(resolveTemplate('no placeholders at all', ctx), 'no placeholders at all');
  assert.equal(resolveTemplate('', ctx), '');
});

test('without a port yet, {port} is left for the launcher to fill', () => {
  const { port: _, ...noPort } = ctx;
  assert.equal(resolveTemplate('http://127.0.0.1:{port}/health?r={replica}', noPort), 'http://127.0.0.1:{port}/health?r=1');
});

test('other services: port, ports, url, urls (comma-joined http://host:port, in replica order)', () => {
  assert.equal(resolveTemplate('{proxy.port}', ctx), '21000');
  assert.equal(resolveTemplate('{proxy.url}', ctx), 'http://127.0.0.1:21000');
  assert.equal(resolveTemplate('{engine.ports}', ctx), '20000,20100');
  assert.equal(resolveTemplate('--backends={engine.urls}', ctx), '--backends=http://127.0.0.1:20000,http://127.0.0.1:20100');
  assert.equal(resolveTemplate('{proxy.urls}', ctx), 'http://127.0.0.1:21000');
  assert.equal(resolveTemplate('{v6.url}', ctx), 'http://[::1]:22000', 'IPv6 literals are bracketed');
  assert.equal(resolveTemplate('{wild.urls}', ctx), 'http://127.0.0.1:23000,http://[::1]:23001', 'a wildcard bind is reached on loopback');
  assert.equal(endpointUrl({ host: 'node12', port: 8000 }), 'http://node12:8000');
});

test('"{{" is a literal "{"; a lone "}" is literal', () => {
  assert.equal(resolveTemplate('{{port}', ctx), '{port}');
  assert.equal(resolveTemplate('{{"a": {{"b": {port}}}', ctx), '{"a": {"b": 30000}}');
  assert.equal(resolveTemplate('}{{}', ctx), '}{}');
  assert.equal(resolveTemplate('{{{port}', ctx), '{30000');
});

test('parseTemplate: parts and errors', () => {
  assert.deepEqual(parseTemplate('a{port}b{engine.urls}'), {
    parts: ['a', { kind: 'self', field: 'port', text: '{port}' }, 'b', { kind: 'service', service: 'engine', field: 'urls', text: '{engine.urls}' }],
    errors: [],
  });
  assert.deepEqual(parseTemplate('{my-svc_2.port}').parts, [{ kind: 'service', service: 'my-svc_2', field: 'port', text: '{my-svc_2.port}' }]);
  assert.deepEqual(parseTemplate('x{prt}y{ port }{a.b.port}{.port}{1a.port}{}').errors, [
    { kind: 'unknown', text: '{prt}' },
    { kind: 'unknown', text: '{ port }' },
    { kind: 'unknown', text: '{a.b.port}' },
    { kind: 'unknown', text: '{.port}' },
    { kind: 'unknown', text: '{1a.port}' },
    { kind: 'unknown', text: '{}' },
  ]);
  assert.deepEqual(parseTemplate('ok {port} then {oops').errors, [{ kind: 'unclosed', offset: 15 }]);
  assert.deepEqual(placeholdersOf('{port}{{x}{proxy.url}').map((p) => p.text), ['{port}', '{proxy.url}']);
});

test('resolution errors: a malformed template (65) or a service with no started replica (a bug: 70)', () => {
  assert.throws(() => resolveTemplate('{nope}', ctx), (e: BerthError) =>
    e.exitCode === EXIT.DATAERR &&
    e.message === 'service "client": "{nope}" uses unknown placeholder {nope}; known: {port}, {replica}, {name}, {host}, {dir}, {gpu}, {rank}, {world_size}, {local_rank}, {node_rank}, {node_count}, {node}, {generation}, {ports.NAME}, {ports.NAME.host}, {ports.NAME.hostport}, {SERVICE.port}, {SERVICE.ports}, {SERVICE.url}, {SERVICE.urls}, {SERVICE.host}, {SERVICE.hosts}, {SERVICE.hostport}, {SERVICE.hostports}, {SERVICE.port.NAME}, {SERVICE.ports.NAME}, {SERVICE.dir}, {SERVICE.dirs}, {templates.NAME}; a port NAME may end in .first, .last, .range or .count (write {{ for a literal "{")');
  assert.throws(() => resolveTemplate('{cache.url}', ctx), (e: BerthError) =>
    e.exitCode === EXIT.SOFTWARE &&
    e.message === 'service "client": {cache.url} in "{cache.url}" refers to service "cache", which has no started replica with a port');
});
