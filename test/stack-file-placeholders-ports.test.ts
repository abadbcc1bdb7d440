import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { anyText, holds, outcome, tokenSoup } from './helpers/property.js';
import type { AssignedPorts } from '../src/allocate/port-set.js';
import { BerthError, EXIT } from '../src/errors.js';
import { parseTemplate, portsRecord, resolveTemplate, type Endpoint, type ReplicaContext } from '../src/stack/index.js';
import { assignedOfRecord } from '../src/stack/record/endpoints.js';

/* The named-port placeholders of a stack: grammar (pure parsing) and values. */

const set = (http: number, dist: number, n: number): AssignedPorts[] => [
  { name: 'http', kind: 'single', ports: [http] },
  { name: 'dist', kind: 'block', ports: Array.from({ length: n }, (_, i) => dist + i) },
];
const endpoints = new Map<string, Endpoint[]>([
  ['engine', [{ host: '127.0.0.1', port: 20000, ports: set(20000, 20001, 8) }, { host: '127.0.0.1', port: 20100, ports: set(20100, 20101, 8) }]],
  ['etcd', [{ host: '127.0.0.1', port: 2379, ports: [{ name: 'client', kind: 'single', ports: [2379] }, { name: 'peer', kind: 'single', ports: [2380] }] }]],
]);
const ctx: ReplicaContext = { name: 'proxy', replica: 0, replicas: 1, host: '127.0.0.1', port: 30000, ports: set(30000, 30010, 4), endpoints };

test('grammar: own ports, a dependency\'s named ports, fields', () => {
  assert.deepEqual(parseTemplate('{ports.http}').parts, [{ kind: 'own', port: 'http', text: '{ports.http}' }]);
  assert.deepEqual(parseTemplate('{ports.dist.range}').parts, [{ kind: 'own', port: 'dist', part: 'range', text: '{ports.dist.range}' }]);
  assert.deepEqual(parseTemplate('{engine.port.dist}').parts, [{ kind: 'service', service: 'engine', field: 'port', port: 'dist', text: '{engine.port.dist}' }]);
  assert.deepEqual(parseTemplate('{engine.ports.dist.last}').parts, [{ kind: 'service', service: 'engine', field: 'ports', port: 'dist', part: 'last', text: '{engine.ports.dist.last}' }]);
  // A port named like a field is still a name: a FIELD only ever follows a NAME.
  assert.deepEqual(parseTemplate('{ports.first}').parts, [{ kind: 'own', port: 'first', text: '{ports.first}' }]);
  assert.deepEqual(parseTemplate('{e.port.first}').parts, [{ kind: 'service', service: 'e', field: 'port', port: 'first', text: '{e.port.first}' }]);
  // The old forms are unchanged.
  assert.deepEqual(parseTemplate('{engine.ports}').parts, [{ kind: 'service', service: 'engine', field: 'ports', text: '{engine.ports}' }]);
});

test('grammar: what is not a placeholder', () => {
  for (const bad of ['{ports}', '{ports.}', '{ports.http.middle}', '{ports.http.first.x}', '{ports.1x}', '{engine.url.http}', '{engine.urls.http}', '{engine.port.http.size}', '{engine.port.}', '{engine.port.http.first.last}', '{port.http}', '{a.b.c.d.e}']) {
    const { errors } = parseTemplate(bad);
    assert.deepEqual(errors, [{ kind: 'unknown', text: bad }], bad);
  }
  assert.deepEqual(parseTemplate('{{ports.http}').parts, ['{ports.http}'], '"{{" is still a literal "{"');
});

test('values: own set, a block\'s first/last/range/count', () => {
  assert.equal(resolveTemplate('--port {ports.http}', ctx), '--port 30000');
  assert.equal(resolveTemplate('{ports.dist}', ctx), '30010', 'a block alone is its first port');
  assert.equal(resolveTemplate('{ports.dist.first}-{ports.dist.last}', ctx), '30010-30013');
  assert.equal(resolveTemplate('{ports.dist.range}/{ports.dist.count}', ctx), '30010-30013/4');
  assert.equal(resolveTemplate('{ports.http.range}', ctx), '30000-30000');
  assert.equal(resolveTemplate('{port}', ctx), '30000', '{port} stays the primary');
});

test('values: a dependency\'s named ports, replica 0 and joined', () => {
  assert.equal(resolveTemplate('{etcd.port.peer}', ctx), '2380');
  assert.equal(resolveTemplate('{engine.port.dist}', ctx), '20001');
  assert.equal(resolveTemplate('{engine.ports.http}', ctx), '20000,20100');
  assert.equal(resolveTemplate('{engine.ports.dist.range}', ctx), '20001-20008,20101-20108');
  assert.equal(resolveTemplate('{engine.urls}', ctx), 'http://127.0.0.1:20000,http://127.0.0.1:20100');
});

test('a port the set lacks at start time is a bug (70): load-time checks catch it first', () => {
  assert.throws(() => resolveTemplate('{ports.grpc}', ctx), (e: BerthError) => e.exitCode === EXIT.SOFTWARE && /has no port "grpc"/.test(e.message));
  assert.throws(() => resolveTemplate('{etcd.port.http}', ctx), (e: BerthError) => e.exitCode === EXIT.SOFTWARE && /"etcd" has no port "http"/.test(e.message));
});

test('endpoints.json ports and back (how other nodes learn a replica\'s set)', () => {
  const s = set(20000, 20001, 8);
  const rec = portsRecord(s);
  assert.deepEqual(rec, { http: 20000, dist: { first: 20001, last: 20008, count: 8 } });
  assert.deepEqual(assignedOfRecord(rec), s);
});

const TOKENS = ['{', '}', '{{', '{port}', '{ports.http}', '{ports.dist}', '{ports.dist.range}', '{ports.dist.count}', '{ports.http.last}', '{ports.nope}', '{ports}', '{ports.}', '{ports.http.first.last}', '{engine.port.dist}', '{engine.ports.http}', '{engine.ports.dist.range}', '{engine.port.x.y}', '{etcd.port.peer.first}', '{etcd.ports.nope}', '{engine.url.http}', '.', 'first', ':'];

test('property: any mix parses without throwing and gives its text back; resolves or says 65/70', () => {
  holds(
    fc.oneof(anyText(60), tokenSoup(TOKENS, 16)),
    (t) => {
      const r = outcome(() => parseTemplate(t));
      assert.ok(r.ok);
      const { parts, errors } = r.value;
      if (errors.length === 0) {
        assert.equal(parts.map((p) => (typeof p === 'string' ? p.split('{').join('{{') : p.text)).join(''), t);
      }
      // 65: malformed (the loader refuses it first); 70: a port no set has (also refused at load).
      const v = outcome(() => resolveTemplate(t, ctx), new Set([65, 70]));
      if (!v.ok) {
        if (v.error.exitCode === 65) assert.ok(errors.length > 0, v.error.message);
        else assert.match(v.error.message, /has no port "(nope|x)"/);
        return;
      }
      const literals = parts.filter((p): p is string => typeof p === 'string').join('');
      for (const m of v.value.matchAll(/\{ports\.[a-z]+[^}]*\}/g)) assert.ok(literals.includes(m[0]), `${JSON.stringify(t)} → ${v.value}`);
    },
    { seed: 1010, numRuns: 500 },
  );
});
