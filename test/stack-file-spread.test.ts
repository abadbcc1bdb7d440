import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AssignedPorts } from '../src/allocate/port-set.js';
import { BerthError, EXIT } from '../src/errors.js';
import { describeTemplateError, parseStack, parseTemplate, resolveCommand, resolveTemplate, type Endpoint, type ReplicaContext } from '../src/stack/index.js';

/* A list spread into one command word per entry: a command: word that is only {...LIST} or {...LIST|PATTERN}. */

const two = (port: number, bus: number): AssignedPorts[] => [
  { name: 'port', kind: 'single', ports: [port] },
  { name: 'bus', kind: 'single', ports: [bus] },
];
const endpoints = new Map<string, Endpoint[]>([
  ['node', [{ host: '127.0.0.1', port: 7000, ports: two(7000, 17000) }, { host: '0.0.0.0', port: 7001, ports: two(7001, 17001) }, { host: '::', port: 7002, ports: two(7002, 17002) }]],
  ['one', [{ host: '10.0.0.1', port: 80 }]],
]);
const ctx: ReplicaContext = { name: 'create', replica: 0, replicas: 1, host: '127.0.0.1', endpoints };

test('redis-cli --cluster create HOST:PORT HOST:PORT HOST:PORT from one word', () => {
  assert.deepEqual(resolveCommand(['redis-cli', '--cluster', 'create', '{...node.hostports}', '--cluster-yes'], ctx), [
    'redis-cli', '--cluster', 'create', '127.0.0.1:7000', '127.0.0.1:7001', '[::1]:7002', '--cluster-yes',
  ]);
});

test('every list spreads, with or without a per-entry pattern; a one-replica list is one word', () => {
  for (const list of ['node.ports', 'node.urls', 'node.hosts', 'node.hostports', 'node.ports.bus', 'node.ports.bus.hostport', 'one.urls']) {
    const bare = resolveTemplate(`{${list}}`, ctx).split(',');
    assert.deepEqual(resolveCommand([`{...${list}}`], ctx), bare, list);
    assert.deepEqual(resolveCommand(['a', `{...${list}|--peer=<{}>}`, 'b'], ctx), ['a', ...bare.map((v) => `--peer=<${v}>`), 'b'], list);
  }
  assert.deepEqual(resolveCommand(['{...node.ports.bus|m{index}=http://{hostport}}'], ctx), ['m0=http://127.0.0.1:17000', 'm1=http://127.0.0.1:17001', 'm2=http://[::1]:17002']);
  // A shared port is one value: one word.
  const shared: ReplicaContext = { ...ctx, sharedOf: new Map([['node', { host: '127.0.0.1', ports: [{ name: 'gossip', kind: 'single', ports: [9000] }] }]]) };
  assert.deepEqual(resolveCommand(['{...node.ports.gossip|-g={port}}'], shared), ['-g=9000']);
});

test('other words are filled as before; "{{..." is a literal; the word is never split on its own', () => {
  assert.deepEqual(resolveCommand(['{{...node.ports}', '--x={node.ports}', '{node.ports| }'], ctx), ['{...node.ports}', '--x=7000,7001,7002', ' , , ']);
  assert.deepEqual(resolveCommand(['{...node.urls|a b}'], ctx), ['a b', 'a b', 'a b']);
});

test('before this, "{..." was always an unknown placeholder: nothing that loaded changes meaning', () => {
  // The same text, read as a non-command text (as every text was before), is an error.
  for (const t of ['{...node.hostports}', '{...node.ports|x{}}', '{...}', '{...port}']) assert.ok(parseTemplate(t).errors.length > 0, t);
});

test('refused: not a list, not the whole word, a separator, outside command:', () => {
  const err = (t: string, commandWord = true) => parseTemplate(t, { commandWord }).errors.map(describeTemplateError);
  assert.match(err('{...node.port}')[0]!, /uses \{\.\.\.node\.port\}: only a list of every replica .* can be spread, and \{node\.port\} is one value/);
  assert.match(err('{...port}')[0]!, /\{port\} is one value/);
  assert.match(err('{...node.port|{}}')[0]!, /can be spread, and \{node\.port\} is one value/);
  // The fix, written out: the text into the pattern (one argument each), or the joined list.
  assert.match(err('--nodes={...node.hostports}')[0]!, /a spread list must be a command: word of its own, but this word also holds "--nodes="; for one argument per entry write "\{\.\.\.node\.hostports\|--nodes=\{\}\}"; for one argument with the comma-joined list, "--nodes=\{node\.hostports\}"/);
  assert.match(err('{port}:{...node.ports}')[0]!, /but this word also holds "\{port\}:"; move that text into the pattern \(\{\.\.\.LIST\|PATTERN\}/);
  assert.match(err('{...node.ports}{...node.ports}')[0]!, /a command: word of its own/);
  assert.match(err('{...node.ports|{}| }')[0]!, /takes no separator; write \{\.\.\.LIST\|PATTERN\}/);
  assert.match(err('{...node.hostports}', false)[0]!, /can only be a word of command:; here write \{node\.hostports\} for the comma-joined list/);
  assert.match(err('{...nodes.hostprots}')[0]!, /unknown placeholder \{\.\.\.nodes\.hostprots\}/);
  assert.throws(() => resolveTemplate('{...node.ports}', ctx), (e: unknown) => e instanceof BerthError && e.exitCode === EXIT.DATAERR);
  assert.throws(() => resolveCommand(['x{...node.ports}'], ctx), (e: unknown) => e instanceof BerthError && e.exitCode === EXIT.DATAERR);
});

const stack = (create: string, more = '') => `services:
  node:
    replicas: 3
    ports: { port: 1, bus: 1 }
    command: [redis-server, --port, "{port}", --cluster-port, "{ports.bus}"]
    ${more}
  create:
    command: [redis-cli, --cluster, create, ${create}, --cluster-yes]
    depends_on: { node: ready }
`;
const refused = (text: string, re: RegExp) =>
  assert.throws(() => parseStack(text, '/x/stack.yaml', '/tmp'), (e: unknown) => e instanceof BerthError && e.exitCode === EXIT.DATAERR && re.test(e.message));

test('checked at load time: 65 with file:line, like every placeholder', () => {
  const ok = parseStack(stack('"{...node.hostports}"'), '/x/stack.yaml', '/tmp');
  assert.deepEqual(ok.services.find((s) => s.name === 'create')!.command, ['redis-cli', '--cluster', 'create', '{...node.hostports}', '--cluster-yes']);
  refused(stack('"--n={...node.hostports}"'), /stack\.yaml:8: service "create": command\[3\] uses \{\.\.\.node\.hostports\}: a spread list must be a command: word of its own/);
  refused(stack('"{...node.hostport}"'), /stack\.yaml:8: .*\{node\.hostport\} is one value/);
  refused(stack('"{...node.hostports}"', 'env: { PEERS: "{...node.hostports}" }'), /stack\.yaml:6: service "node": env PEERS uses \{\.\.\.node\.hostports\}: .*only be a word of command:/);
  refused(stack('"{...node.hostports}"', 'ready: "cmd:redis-cli {...node.ports}"'), /stack\.yaml:6: service "node": ready uses \{\.\.\.node\.ports\}: .*only be a word of command:/);
  // The list's service must still be a dependency, as for {node.hostports}.
  refused(stack('"{...node.hostports}"').replace('    depends_on: { node: ready }\n', ''), /stack\.yaml:8: service "create": command\[3\] uses \{\.\.\.node\.hostports\}, but "node" is not in its depends_on/);
});

// Issue 32 item 21: {svc.dirs} is every replica's directory, so it spreads; before, it was
// refused as "one value".
test('{...svc.dirs} is one word per replica directory; {svc.dir} stays one value', () => {
  const withDirs: ReplicaContext = { ...ctx, dirs: new Map([['node', ['/run/node-0', '/run/node 1', '/run/node-2']]]) };
  assert.deepEqual(parseTemplate('{...node.dirs}', { commandWord: true }).errors, []);
  assert.deepEqual(resolveCommand(['ls', '{...node.dirs}'], withDirs), ['ls', '/run/node-0', '/run/node 1', '/run/node-2']);
  assert.equal(resolveTemplate('{node.dirs}', withDirs), '/run/node-0,/run/node 1,/run/node-2');
  const [e] = parseTemplate('{...node.dir}', { commandWord: true }).errors;
  assert.match(describeTemplateError(e!), /only a list of every replica \(.*\.dirs\) can be spread, and \{node\.dir\} is one value/);
  const [f] = parseTemplate('{...node.dirs|-d={}}', { commandWord: true }).errors;
  assert.match(describeTemplateError(f!), /directories take no per-entry pattern: write \{\.\.\.node\.dirs\}/);
});
