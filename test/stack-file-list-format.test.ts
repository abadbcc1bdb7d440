import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AssignedPorts } from '../src/allocate/port-set.js';
import { BerthError, EXIT } from '../src/errors.js';
import { parseStack, parseTemplate, resolveTemplate, describeTemplateError, type Endpoint, type ReplicaContext } from '../src/stack/index.js';

/* A list placeholder formatted per entry: {LIST|PATTERN} and {LIST|PATTERN|SEP} (list-format.ts). */

const two = (client: number, cluster: number): AssignedPorts[] => [
  { name: 'client', kind: 'single', ports: [client] },
  { name: 'cluster', kind: 'single', ports: [cluster] },
];
const endpoints = new Map<string, Endpoint[]>([
  ['nats', [{ host: '127.0.0.1', port: 4222, ports: two(4222, 6222) }, { host: '0.0.0.0', port: 4223, ports: two(4223, 6223) }, { host: '::', port: 4224, ports: two(4224, 6224) }]],
  ['one', [{ host: '10.0.0.1', port: 80, ports: [{ name: 'port', kind: 'single', ports: [80] }] }]],
]);
const ctx: ReplicaContext = { name: 'nats', replica: 0, replicas: 1, host: '127.0.0.1', port: 4222, endpoints };

test('nats routes and etcd initial-cluster from one placeholder each', () => {
  assert.equal(resolveTemplate('--routes={nats.ports.cluster.hostport|nats://{}}', ctx), '--routes=nats://127.0.0.1:6222,nats://127.0.0.1:6223,nats://[::1]:6224');
  assert.equal(resolveTemplate('{nats.ports.cluster|nats://{hostport}}', ctx), 'nats://127.0.0.1:6222,nats://127.0.0.1:6223,nats://[::1]:6224', '{hostport} is the listed port\'s');
  assert.equal(resolveTemplate('{nats.ports.cluster|m{index}=http://{hostport}}', ctx), 'm0=http://127.0.0.1:6222,m1=http://127.0.0.1:6223,m2=http://[::1]:6224');
});

test('every list takes a format; {} is the entry as the bare list writes it', () => {
  for (const list of ['nats.ports', 'nats.urls', 'nats.hosts', 'nats.hostports', 'nats.ports.cluster', 'nats.ports.cluster.range', 'nats.ports.client.host']) {
    const bare = resolveTemplate(`{${list}}`, ctx);
    assert.equal(resolveTemplate(`{${list}|{}}`, ctx), bare, list);
    assert.equal(resolveTemplate(`{${list}|<{}>|;}`, ctx), bare.split(',').map((v) => `<${v}>`).join(';'), list);
  }
  // The entry's port is the one the list is about: the primary, or port NAME.
  assert.equal(resolveTemplate('{nats.hostports|{name}{index}={host}:{port}| }', ctx), 'nats0=127.0.0.1:4222 nats1=127.0.0.1:4223 nats2=::1:4224');
  assert.equal(resolveTemplate('{nats.ports.cluster.count|{port}}', ctx), '6222,6223,6224');
  // {node}: the node an entry runs on (this replica's for one on this host).
  const nodes: ReplicaContext = { ...ctx, rank: { rank: 0, worldSize: 1, localRank: 0, nodeRank: 0, nodeCount: 1, node: 'n1' }, endpoints: new Map([['nats', endpoints.get('nats')!.map((e, i) => (i === 0 ? e : { ...e, node: `n${i + 1}` }))]]) };
  assert.equal(resolveTemplate('{nats.ports|{node}:{port}}', nodes), 'n1:4222,n2:4223,n3:4224');
  // An empty separator, and a pattern of literal text only.
  assert.equal(resolveTemplate('{nats.ports|x{index}|}', ctx), 'x0x1x2');
  assert.equal(resolveTemplate('{nats.ports|-}', ctx), '-,-,-');
});

test('"{{" is a literal "{" in a pattern and in a separator; the format needs no escaping beside other placeholders', () => {
  assert.equal(resolveTemplate('{nats.ports|{{{}|{{}', ctx), '{4222{{4223{{4224');
  // The first "}" outside a field ends the placeholder: a pattern holds no literal "}".
  assert.equal(resolveTemplate('{nats.ports|{{"p": {}}}', ctx), '{"p": 4222,{"p": 4223,{"p": 4224}');
  assert.equal(resolveTemplate('{port} {nats.ports|:{}} }', ctx), '4222 :4222,:4223,:4224 }');
  // Before a format could be written, "{a|b}" was always an error: nothing that parsed before changes.
  assert.deepEqual(parseTemplate('{{nats.ports|x}').parts, ['{nats.ports|x}']);
});

test('a malformed format: not a list, an unknown field (did you mean), a field in the separator, a third "|", unclosed', () => {
  const err = (t: string) => parseTemplate(t).errors.map(describeTemplateError);
  assert.match(err('{nats.port|x{}}')[0]!, /uses \{nats\.port\|x\{\}\}: only a list of every replica .* can be formatted per entry, and \{nats\.port\} is one value/);
  assert.match(err('{port|x}')[0]!, /\{port\} is one value/);
  assert.match(err('{nats.hostports|{hots}}')[0]!, /\{hots\} is not a field of a list entry \(did you mean "host"\?\); an entry has \{\} .*\{index\}, \{name\}, \{host\}, \{port\}, \{hostport\}/);
  assert.match(err('{nats.hostports|{url}}')[0]!, /\{url\} is not a field of a list entry/);
  assert.match(err('{nats.ports|a|{index}}')[0]!, /its separator is plain text, but holds \{index\}/);
  assert.match(err('{nats.ports|a|b|c}')[0]!, /has a third "\|"/);
  assert.match(err('{nats.ports|{x')[0]!, /has a "\{" with no closing "\}"/);
  assert.match(err('{nats.prots|x}')[0]!, /uses unknown placeholder \{nats\.prots\}/);
  // Every problem at once, and none resolves.
  assert.equal(err('{nats.hostports|{a}{b}}').length, 2);
  assert.throws(() => resolveTemplate('{nats.hostports|{a}}', ctx), (e: unknown) => e instanceof BerthError && e.exitCode === EXIT.DATAERR);
});

test('checked at load time: 65 with file:line and a "did you mean"; a formatted dependency must still be in depends_on', () => {
  const stack = (cmd: string, deps = 'depends_on: { nats: ready }') => `services:
  nats:
    replicas: 3
    ports: { client: 1, cluster: 1 }
    command: [nats-server, -p, "{port}", --routes, "{nats.ports.cluster.hostport|nats://{}}"]
  check:
    command: [sh, -c, "${cmd}"]
    ${deps}
    job: true
`;
  assert.doesNotThrow(() => parseStack(stack('echo {nats.ports.cluster|{index}={hostport}}'), '/x/stack.yaml', '/tmp'));
  assert.throws(
    () => parseStack(stack('echo {nats.ports.cluster|{idx}={hostport}}'), '/x/stack.yaml', '/tmp'),
    (e: unknown) => e instanceof BerthError && e.exitCode === EXIT.DATAERR && /stack\.yaml:7: service "check": command\[2\] uses \{nats\.ports\.cluster\|\{idx\}=\{hostport\}\}: \{idx\} is not a field of a list entry \(did you mean "index"\?\)/.test(e.message),
  );
  assert.throws(
    () => parseStack(stack('echo {nats.ports.clustr|{}}'), '/x/stack.yaml', '/tmp'),
    (e: unknown) => e instanceof BerthError && e.exitCode === EXIT.DATAERR && /stack\.yaml:7: .*clustr.*did you mean "cluster"/.test(e.message),
  );
  assert.throws(
    () => parseStack(stack('echo {nats.urls|{}}', 'depends_on: {}'), '/x/stack.yaml', '/tmp'),
    (e: unknown) => e instanceof BerthError && e.exitCode === EXIT.DATAERR && /stack\.yaml:7: .*nats.*depends_on/.test(e.message),
  );
});
