import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IMPLICIT_SET } from '../src/allocate/port-set.js';
import { BerthError, EXIT } from '../src/errors.js';
import { parseStack } from '../src/stack/index.js';

/* `ports:` in stack files: what loads, and every load-time refusal (65, file:line). */

const parse = (text: string) => parseStack(text, 'ports.yaml', '/tmp');
function problems(text: string): string[] {
  try {
    parse(text);
  } catch (e) {
    assert.ok(e instanceof BerthError);
    assert.equal(e.exitCode, EXIT.DATAERR);
    return (e.details?.errors as string[]) ?? [e.message];
  }
  assert.fail('the stack loaded');
}

const BANDS = `bands:
  engines: { range: 20000-20399, window: 100 }
  shared: { range: 21000-21099 }
`;

test('ports: loads in order, the first entry primary; no ports: is the implicit set', () => {
  const s = parse(`${BANDS}services:
  engine:
    replicas: 4
    band: engines
    ports:
      http: 1
      dist: { block: 32 }
      rest: { block: window }
    command: [vllm, serve, --port, "{ports.http}"]
    env: { VLLM_PORT: "{ports.dist}", LAST: "{ports.dist.last}" }
  proxy:
    band: shared
    depends_on: [engine]
    command: [proxy, "{port}", "{engine.ports.http}", "{engine.urls}"]
  job:
    job: true
    command: [true]
`);
  const [engine, proxy, job] = s.services;
  assert.deepEqual(engine!.ports, [
    { name: 'http', kind: 'single' },
    { name: 'dist', kind: 'block', count: 32 },
    { name: 'rest', kind: 'window' },
  ]);
  assert.equal(engine!.portsDeclared, true);
  assert.deepEqual(proxy!.ports, IMPLICIT_SET);
  assert.equal(proxy!.portsDeclared, false);
  assert.deepEqual(job!.ports, [], 'a portless job has no ports');
  assert.deepEqual(job!.source, { kind: 'none' });
});

test('a job that declares ports: gets them; blocks in a band without windows are allowed with replicas', () => {
  const s = parse(`${BANDS}services:
  a:
    job: true
    ports: { api: 1 }
    command: [x, "{ports.api}"]
  b:
    band: shared
    replicas: 3
    ports: { http: 1, dist: { block: 16 } }
    command: [x]
`);
  assert.equal(s.services[0]!.source.kind, 'default');
  assert.deepEqual(s.services[1]!.ports, [{ name: 'http', kind: 'single' }, { name: 'dist', kind: 'block', count: 16 }]);
});

test('load-time refusals name the file and line', () => {
  const errs = problems(`${BANDS}services:
  a:
    ports: { http: 1, HTTP: 1 }
    command: [x]
  b:
    ports: { dist: { block: 4 }, http: 1 }
    command: [x]
  c:
    band: engines
    ports: { http: 1, dist: { block: 100 } }
    command: [x]
  d:
    band: shared
    ports: { http: 1, w: { block: window } }
    command: [x]
  e:
    port: none
    ports: { http: 1 }
    command: [x]
  f:
    ports: { http: 2, x: { block: 0 }, y: { size: 3 } }
    command: [x]
  g:
    port: 9000
    ports: { http: 1, grpc: 1 }
    command: [x]
  h:
    band: shared
    replicas: 2
    ports: { http: 1, dist: { block: 50 } }
    command: [x]
  i:
    ports: { http: 1 }
    command: [x, "{ports.htp}", "{ports.http.size}"]
  j:
    depends_on: [i]
    command: [x, "{i.port.grpc}", "{i.port.http}"]
  ports:
    command: [x]
  k:
    replicas: 2
    band: engines
    ports: { http: 1 }
    command: [x]
  l:
    depends_on: [k]
    command: [x, "{k.port.http}", "{k.ports.http.range}"]
`);
  assert.deepEqual(errs, [
    'ports.yaml:6: service "a": ports: port names "http" and "HTTP" are the same variable BERTH_PORT_HTTP',
    'ports.yaml:9: service "b": ports: the first entry is the primary port ({port}, readiness, URLs) and must be one port, but "dist" is a block; put a single port first, e.g. ports: { http: 1, dist: { block: 32 } }',
    'ports.yaml:13: service "c": ports: each replica takes its ports from its window of band "engines" (100 ports), but its 2 entries need 101 ports; widen the window or shrink the set',
    'ports.yaml:17: service "d": ports: "w" is { block: window }, the replica\'s band window, but band "shared" has no window; use a band with "window:" or { block: N }',
    'ports.yaml:21: service "e": "ports:" and "port: none" contradict each other; remove one',
    'ports.yaml:24: service "f": port "http" must be 1 (one port), shared (one port for every replica), learn (one the service chooses), { block: N } or { block: window }, found number 2',
    'ports.yaml:24: service "f": port "x": block must be a number of ports 1-4096 or "window" (the replica\'s band window), found number 0',
    'ports.yaml:24: service "f": port "y" must be 1 (one port), shared (one port for every replica), learn (one the service chooses), { block: N } or { block: window }, found another mapping',
    'ports.yaml:28: service "g": ports: "port: 9000" is one port, but its 2 entries need 2 ports; use band: NAME or range: LO-HI',
    'ports.yaml:33: service "h": ports: 2 replicas × 51 ports do not fit band "shared" (21000-21099), which has 100; widen it or shrink the set',
    'ports.yaml:37: service "i": command[2] uses unknown placeholder {ports.http.size}; known: {port}, {replica}, {name}, {host}, {dir}, {gpu}, {rank}, {world_size}, {local_rank}, {node_rank}, {node_count}, {node}, {generation}, {ports.NAME}, {ports.NAME.host}, {ports.NAME.hostport}, {SERVICE.port}, {SERVICE.ports}, {SERVICE.url}, {SERVICE.urls}, {SERVICE.host}, {SERVICE.hosts}, {SERVICE.hostport}, {SERVICE.hostports}, {SERVICE.port.NAME}, {SERVICE.ports.NAME}, {SERVICE.dir}, {SERVICE.dirs}, {templates.NAME}; a port NAME may end in .first, .last, .range or .count (write {{ for a literal "{")',
    'ports.yaml:37: service "i": command[1] uses {ports.htp}, but its ports are http (did you mean "http"?)',
    'ports.yaml:40: service "j": command[1] uses {i.port.grpc}, but "i"\'s ports are http',
    'ports.yaml:41: service "ports": the name "ports" is taken by the placeholders ({ports.NAME} is a replica\'s own port); rename the service',
    'ports.yaml:50: service "l": command[1] uses {k.port.http}, but "k" has 2 replicas; use {k.ports.http} (all of them, comma-separated)',
  ]);
});

// Issue 32 item 21: a portless step's {ports.X} most likely means a dependency's port X;
// before, it was told only that it has "port: none".
test('a portless step naming {ports.X} is told to write {SERVICE.port.X}', () => {
  const yaml = (cmd: string) => `
services:
  db:
    ports: { http: 1, admin: 1 }
    command: [sleep, "1"]
  step:
    port: none
    command: [curl, "${cmd}"]
    depends_on: [db]
`;
  const message = (cmd: string) => {
    try {
      parseStack(yaml(cmd), 'step.yaml', '/tmp');
    } catch (e) {
      return (e as Error).message;
    }
    return 'no error';
  };
  assert.equal(message('http://127.0.0.1:{ports.admin}/'), `step.yaml:8: service "step": command[1] uses {ports.admin}, but the service has "port: none"; {ports.NAME} is the service's own port: for db's, write {db.port.admin}`);
  assert.match(message('{ports.nope.first}'), /"port: none"; \{ports\.NAME\} is the service's own port: another service's is \{SERVICE\.port\.nope\.first\}$/);
});
