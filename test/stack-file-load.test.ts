import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { BerthError, EXIT } from '../src/errors.js';
import type { HostSysctls } from '../src/host/host-map.js';
import { loadStack, parseStack, replicaSource, type ServiceSpec, type StackSpec } from '../src/stack/index.js';
import { dataErrors } from './helpers/refusal.js';

const FIX = 'test/fixtures/stacks';
const ABS = resolve(FIX);

/** Loads a fixture by its bare name from inside the fixture folder, so messages say "name:line:". */
function load(name: string): StackSpec {
  const cwd = process.cwd();
  process.chdir(FIX);
  try {
    return loadStack(name);
  } finally {
    process.chdir(cwd);
  }
}

const errorsOf = (name: string): string[] => dataErrors(name, () => load(name));

const svc = (s: StackSpec, name: string): ServiceSpec => {
  const found = s.services.find((x) => x.name === name);
  assert.ok(found, `no service ${name}`);
  return found;
};

// Every message, exactly: they are the user interface of a stack file.
const EXPECTED: Record<string, string[]> = {
  "bad-top.yaml": [
    `bad-top.yaml:1: no "services" key at the top level; expected services: { NAME: { command: [PROGRAM, ARG…] } }`,
    `bad-top.yaml:2: give either "layout: FILE" or inline "bands:", not both (layout is at line 1)`,
    `bad-top.yaml:4: unknown top-level key "servics" (did you mean "services"?); allowed keys are "layout", "bands", "services", "strict" (and "x-…" for anchors)`,
  ],
  "bad-syntax.yaml": [
    `bad-syntax.yaml:3: YAML syntax error: Flow sequence in block collection must be sufficiently indented and end with a ] (the "[" opened on this line is never closed)`,
  ],
  "bad-empty.yaml": [
    `bad-empty.yaml:1: the stack is empty; expected services: { NAME: { command: [PROGRAM, ARG…] } }`,
  ],
  "bad-list.yaml": [
    `bad-list.yaml:1: the top level must be a mapping with a "services" key, found a list; expected services: { NAME: { command: [PROGRAM, ARG…] } }`,
  ],
  "bad-no-services.yaml": [
    `bad-no-services.yaml:1: "services" is empty; define at least one service, e.g. services: { NAME: { command: [PROGRAM, ARG…] } }`,
  ],
  "bad-layout-missing.yaml": [
    `bad-layout-missing.yaml:1: layout "./nope.yaml": cannot read nope.yaml: no such file`,
  ],
  "bad-layout-errors.yaml": [
    `bad-layout.yaml:2: band "engines": unknown key "windw" (did you mean "window"?); allowed keys are "range" and "window"`,
  ],
  "bad-inline-bands.yaml": [
    `bad-inline-bands.yaml:7: band "proxy" overlaps band "engines" (line 6) on ports 20200-20299; bands must not share ports`,
  ],
  "bad-inline-json.json": [
    `bad-inline-json.json:1: band "e": window 500 is larger than the band (range 20000-20099 has 100 ports); use a window of at most 100 or widen the range`,
  ],
  "bad-keys.yaml": [
    `bad-keys.yaml:4: service "a": command must be a list (argv), e.g. [node, server.js, --port, "{port}"], found the text "node server.js"; berth runs no shell (write [sh, -c, "…"] if you need one)`,
    `bad-keys.yaml:5: service "a": unknown key "replica" (did you mean "replicas"?); allowed keys: command, replicas, nodes, band, port, ports, range, instance, host, env, templates, cwd, handoff, ready, ready_timeout, depends_on, restart, restart_limit, stop_grace, job, logs, strays, scheme, dir_owner, strict`,
    `bad-keys.yaml:6: service "a": replicas must be a whole number ≥ 1 or "gpus", found number 0`,
    `bad-keys.yaml:7: service "a": "replicas" is given twice (first at line 6)`,
    `bad-keys.yaml:9: service "b": command must be a non-empty list (argv), e.g. [node, server.js, --port, "{port}"], found an empty list`,
    `bad-keys.yaml:10: service "b": band "engins" is not in the layout (layout.yaml) (did you mean "engines"?); bands: engines, proxy, default`,
    `bad-keys.yaml:11: service "b": give one of band, port or range (band is already given at line 10)`,
    `bad-keys.yaml:13: service "c": command[1] must be text, found a list`,
    `bad-keys.yaml:14: service "c": range must be LO-HI with 1 ≤ LO ≤ HI ≤ 65535 (e.g. 20000-20099), found the text "9000-8000"`,
    `bad-keys.yaml:15: service "c": instance needs "band: NAME" (it picks the band's instance window)`,
    `bad-keys.yaml:18: service "d": env name "1BAD" is not a variable name (letters, digits and "_", not starting with a digit)`,
    `bad-keys.yaml:18: service "d": env EMPTY must be text, found nothing (write "" for an empty value)`,
    `bad-keys.yaml:18: service "d": env LIST must be text, found a list`,
    `bad-keys.yaml:19: service "d": unknown key "env2" (did you mean "env"?); allowed keys: command, replicas, nodes, band, port, ports, range, instance, host, env, templates, cwd, handoff, ready, ready_timeout, depends_on, restart, restart_limit, stop_grace, job, logs, strays, scheme, dir_owner, strict`,
    `bad-keys.yaml:20: service "d": handoff must be "release" or "fd", found the text "socket"`,
    `bad-keys.yaml:21: service "d": ready must be http://HOST:{port}/PATH, tcp, or cmd:COMMAND, found "http//nope"`,
    `bad-keys.yaml:22: service "d": ready_timeout must be a duration like 500ms, 10s, 5m, found the text "soon"`,
    `bad-keys.yaml:23: service "d": stop_grace must be a duration like 500ms, 10s, 5m, found number 0x10`,
    `bad-keys.yaml:26: service "e": https readiness probes are not supported; probe the plain-http health endpoint, or use "ready: cmd:curl -sfk https://127.0.0.1:{port}/health"`,
    `bad-keys.yaml:27: service "e": restart must be "no" or "on-failure", found boolean false (write restart: "no")`,
    `bad-keys.yaml:28: service "e": restart_limit needs "restart: on-failure"`,
    `bad-keys.yaml:29: service "e": job must be true or false, found the text "yes"`,
    `bad-keys.yaml:30: service "e": logs must be "file" (log files only) or "attach" (also streamed here), found the text "tail"`,
    `bad-keys.yaml:31: service "e": host "localhost" may resolve to 127.0.0.1 or ::1, and a service bound to one is not reachable on the other; write 127.0.0.1 or ::1`,
    `bad-keys.yaml:32: service "f": missing "command: [node, server.js, --port, "{port}"]"`,
    `bad-keys.yaml:33: service "f": "ready: cmd:" needs a command, e.g. cmd:curl -sf http://127.0.0.1:{port}/health`,
    `bad-keys.yaml:38: service "g": "ready: tcp" cannot work with "handoff: fd": the inherited socket already listens, so a connect succeeds before the service runs; use ready: http://127.0.0.1:{port}/PATH or cmd:COMMAND`,
    `bad-keys.yaml:39: service "g": port must be a TCP port 1-65535, "learn" (one the service chooses) or "none", found number 0`,
    `bad-keys.yaml:40: service "g": depends_on must be a mapping { SERVICE: started|ready|completed } or a list of services (= ready), found the text "engine"`,
    `bad-keys.yaml:41: service "bad name": invalid name; use letters, digits, "_" and "-", starting with a letter`,
    `bad-keys.yaml:43: service "h": has no settings; it needs at least "command: [node, server.js, --port, "{port}"]"`,
    `bad-keys.yaml:44: service "i": expected a mapping of settings (command, replicas, ready, …), found a list`,
    `bad-keys.yaml:47: service "j": ready "http://:{port}/x" is not a valid URL; expected http://HOST:{port}/PATH`,
    `bad-keys.yaml:48: service "j": ready_timeout must be more than 0`,
    `bad-keys.yaml:49: service "j": replicas must be a whole number ≥ 1 or "gpus", found the text "many"`,
    `bad-keys.yaml:51: service "j": instance 2 needs band "proxy" to have a window; a band without "window:" is one instance (0)`,
  ],
  "bad-deps.yaml": [
    `bad-deps.yaml:4: service "a": depends on itself; remove "a" from its depends_on`,
    `bad-deps.yaml:4: service "a": dependency cycle a → b → c → a; remove one of these depends_on entries`,
    `bad-deps.yaml:7: service "b": depends_on entries must be service names, found number 7`,
    `bad-deps.yaml:10: service "c": depends_on "d": the condition must be started, ready or completed, found the text "healthy"`,
    `bad-deps.yaml:10: service "c": depends on "engin", which is not a service of this stack (did you mean "engine"?); services: a, b, c, d, d2, engine, job`,
    `bad-deps.yaml:10: service "c": depends on "job" completing, but "job" is the job: the stack ends when it exits`,
    `bad-deps.yaml:13: service "d": depends_on lists "d2" twice (first at line 13)`,
    `bad-deps.yaml:13: service "d": dependency cycle d → d2 → d; remove one of these depends_on entries`,
    `bad-deps.yaml:16: service "d2": depends_on "d": the condition must be started, ready or completed, found nothing`,
  ],
  "cycle3.yaml": [
    `cycle3.yaml:4: service "a": dependency cycle a → c → b → a; remove one of these depends_on entries`,
    `cycle3.yaml:13: service "x": dependency cycle x → y → x; remove one of these depends_on entries`,
  ],
  "bad-placeholders.yaml": [
    `bad-placeholders.yaml:4: service "engine": command[2] uses {engine.port}, but "engine" has 2 replicas; use {engine.ports} (all of them, comma-separated)`,
    `bad-placeholders.yaml:6: service "proxy": command[3] uses unknown placeholder {prt}; known: {port}, {replica}, {name}, {host}, {dir}, {gpu}, {rank}, {world_size}, {local_rank}, {node_rank}, {node_count}, {node}, {generation}, {ports.NAME}, {ports.NAME.host}, {ports.NAME.hostport}, {SERVICE.port}, {SERVICE.ports}, {SERVICE.url}, {SERVICE.urls}, {SERVICE.host}, {SERVICE.hosts}, {SERVICE.hostport}, {SERVICE.hostports}, {SERVICE.port.NAME}, {SERVICE.ports.NAME}, {SERVICE.dir}, {SERVICE.dirs}, {templates.NAME}; a port NAME may end in .first, .last, .range or .count (write {{ for a literal "{")`,
    `bad-placeholders.yaml:6: service "proxy": command[4] uses unknown placeholder {engine.adress}; known: {port}, {replica}, {name}, {host}, {dir}, {gpu}, {rank}, {world_size}, {local_rank}, {node_rank}, {node_count}, {node}, {generation}, {ports.NAME}, {ports.NAME.host}, {ports.NAME.hostport}, {SERVICE.port}, {SERVICE.ports}, {SERVICE.url}, {SERVICE.urls}, {SERVICE.host}, {SERVICE.hosts}, {SERVICE.hostport}, {SERVICE.hostports}, {SERVICE.port.NAME}, {SERVICE.ports.NAME}, {SERVICE.dir}, {SERVICE.dirs}, {templates.NAME}; a port NAME may end in .first, .last, .range or .count (write {{ for a literal "{")`,
    `bad-placeholders.yaml:6: service "proxy": command[5] uses unknown placeholder { port }; known: {port}, {replica}, {name}, {host}, {dir}, {gpu}, {rank}, {world_size}, {local_rank}, {node_rank}, {node_count}, {node}, {generation}, {ports.NAME}, {ports.NAME.host}, {ports.NAME.hostport}, {SERVICE.port}, {SERVICE.ports}, {SERVICE.url}, {SERVICE.urls}, {SERVICE.host}, {SERVICE.hosts}, {SERVICE.hostport}, {SERVICE.hostports}, {SERVICE.port.NAME}, {SERVICE.ports.NAME}, {SERVICE.dir}, {SERVICE.dirs}, {templates.NAME}; a port NAME may end in .first, .last, .range or .count (write {{ for a literal "{")`,
    `bad-placeholders.yaml:6: service "proxy": command[1] uses {engine.url}, but "engine" is not in its depends_on; add depends_on: { engine: ready } (or started, to need only its port)`,
    `bad-placeholders.yaml:6: service "proxy": command[2] uses {engine.port}, but "engine" is not in its depends_on; add depends_on: { engine: ready } (or started, to need only its port)`,
    `bad-placeholders.yaml:7: service "proxy": env D has a "{" with no closing "}" (write {{ for a literal "{")`,
    `bad-placeholders.yaml:7: service "proxy": env A uses {enigne.urls}, but there is no service "enigne" (did you mean "engine"?); services: engine, proxy, worker, client`,
    `bad-placeholders.yaml:7: service "proxy": env B uses {client.url}, but "client" is not in its depends_on; add depends_on: { client: ready } (or started, to need only its port)`,
    `bad-placeholders.yaml:7: service "proxy": env C uses {worker.port}, but "worker" has no port ("port: none")`,
    `bad-placeholders.yaml:8: service "proxy": ready uses {proxy2.url}, but there is no service "proxy2" (did you mean "proxy"?); services: engine, proxy, worker, client`,
    `bad-placeholders.yaml:12: service "worker": command[1] uses {port}, but the service has "port: none"`,
    `bad-placeholders.yaml:13: service "worker": ready uses unknown placeholder {x}; known: {port}, {replica}, {name}, {host}, {dir}, {gpu}, {rank}, {world_size}, {local_rank}, {node_rank}, {node_count}, {node}, {generation}, {ports.NAME}, {ports.NAME.host}, {ports.NAME.hostport}, {SERVICE.port}, {SERVICE.ports}, {SERVICE.url}, {SERVICE.urls}, {SERVICE.host}, {SERVICE.hosts}, {SERVICE.hostport}, {SERVICE.hostports}, {SERVICE.port.NAME}, {SERVICE.ports.NAME}, {SERVICE.dir}, {SERVICE.dirs}, {templates.NAME}; a port NAME may end in .first, .last, .range or .count (write {{ for a literal "{")`,
    `bad-placeholders.yaml:13: service "worker": ready uses {port}, but the service has "port: none"`,
    `bad-placeholders.yaml:15: service "client": command[1] uses {proxy.url}, but "proxy" is not in its depends_on; add depends_on: { proxy: ready } (or started, to need only its port)`,
  ],
  "bad-ports.yaml": [
    `bad-ports.yaml:7: service "b": port 8000 overlaps port 8000 of service "a" (line 4); give each service its own ports`,
    `bad-ports.yaml:10: service "c": range 7990-8010 overlaps port 8000 of service "a" (line 4); give each service its own ports`,
    `bad-ports.yaml:10: service "c": range 7990-8010 overlaps port 8000 of service "b" (line 7); give each service its own ports`,
    `bad-ports.yaml:13: service "d": range 8005-8100 overlaps range 7990-8010 of service "c" (line 10) on ports 8005-8010; give each service its own ports`,
    `bad-ports.yaml:20: service "f": window 1 of band "engines" (20100-20199) overlaps replica 1's window 1 of band "engines" (20100-20199) of service "e" (line 16); give each service its own ports`,
    `bad-ports.yaml:28: service "h": replicas 2 with the fixed port 9000: every replica would need port 9000; use range: LO-HI or a band with a window`,
    `bad-ports.yaml:32: service "i": replicas 2 from instance 2 need windows 2-3 of band "engines" (20000-20299, window 100), which has 3 (0-2); widen the band, use a smaller window, or lower replicas`,
    `bad-ports.yaml:42: service "l": range 21090-21110 overlaps band "proxy" (21000-21099) of service "j" (line 36) on ports 21090-21099; give each service its own ports`,
    `bad-ports.yaml:42: service "l": range 21090-21110 overlaps band "proxy" (21000-21099) of service "k" (line 39) on ports 21090-21099; give each service its own ports`,
    `bad-ports.yaml:46: service "m": replicas "gpus" with the fixed port 9100: every replica would need port 9100; use range: LO-HI or a band with a window`,
  ],
  "bad-jobs.yaml": [
    `bad-jobs.yaml:9: service "b": only one service may be the job; "a" (line 4) already is`,
  ],
};

for (const [name, errors] of Object.entries(EXPECTED)) {
  test(`${name}: every problem reported at once, exactly`, () => {
    assert.deepEqual(errorsOf(name), errors);
  });
}

test('the demo stack loads: replicas on windows, placeholders kept for start time, client without a port', () => {
  const s = loadStack('examples/demo/stack.yaml');
  assert.equal(s.file, 'examples/demo/stack.yaml');
  assert.equal(s.dir, resolve('examples/demo'));
  assert.equal(s.layout?.source, 'examples/demo/layout.yaml');
  assert.deepEqual(s.services.map((x) => x.name), ['engine', 'proxy', 'client']);
  const engine = svc(s, 'engine');
  assert.equal(engine.replicas, 2);
  assert.deepEqual(engine.source, { kind: 'band', band: { name: 'engines', lo: 20000, hi: 20799, window: 100, line: 5 }, instance: 0 });
  assert.deepEqual(engine.ready, { kind: 'http', url: 'http://127.0.0.1:{port}/health' });
  assert.equal(engine.readyTimeoutMs, 60_000);
  assert.equal(engine.cwd, resolve('examples/demo'));
  assert.deepEqual(svc(s, 'proxy').dependsOn, [{ service: 'engine', condition: 'ready', line: 20 }]);
  assert.deepEqual(svc(s, 'proxy').command, ['node', 'proxy.js', '--port', '{port}', '--backends', '{engine.urls}']);
  const client = svc(s, 'client');
  assert.equal(client.job, true);
  assert.deepEqual(client.source, { kind: 'none' });
  // The failing variant differs only in FAIL_REPLICA.
  const f = loadStack('examples/demo/stack-fail.yaml');
  assert.deepEqual(svc(f, 'engine').env, { MODEL: 'tiny-demo', FAIL_REPLICA: '1' });
  assert.deepEqual({ ...f, file: s.file, services: f.services.map((x) => ({ ...x, env: {} })) }, { ...s, services: s.services.map((x) => ({ ...x, env: {} })) });
});

test('valid-full.yaml: every key and its defaults', () => {
  const s = load('valid-full.yaml');
  assert.equal(s.dir, ABS);
  assert.equal(s.layout?.source, 'layout.yaml');
  const engines = { name: 'engines', lo: 20000, hi: 20299, window: 100, line: 2 };
  assert.deepEqual(svc(s, 'engine'), {
    name: 'engine',
    line: 4,
    command: ['python', '-m', 'server', '--port', '{port}', '--rank', '{replica}', '--name', '{name}-{replica}', '7', 'true'],
    replicas: 2,
    source: { kind: 'band', band: engines, instance: 1 },
    ports: [{ name: 'port', kind: 'single' }],
    portsDeclared: false,
    shared: [],
    sharedKept: [],
    host: '127.0.0.1',
    env: { MODEL: 'tiny', LAYERS: '12', DEBUG: 'false', JSON: '{{"a": 1}' },
    templates: [],
    cwd: join(ABS, 'work'),
    handoff: 'fd',
    ready: { kind: 'http', url: 'http://127.0.0.1:{port}/health' },
    readyTimeoutMs: 600_000,
    dependsOn: [],
    restart: { policy: 'on-failure', limit: 5 },
    stopGraceMs: 500,
    job: false,
    logs: 'attach',
    strays: [],
    scheme: 'http',
    oneShot: false,
  });
  assert.deepEqual(svc(s, 'proxy'), {
    name: 'proxy',
    line: 18,
    command: ['proxy', '--listen', '{host}:{port}', '--backends', '{engine.urls}', '--first', '{engine.ports}'],
    replicas: 1,
    source: { kind: 'band', band: { name: 'proxy', lo: 21000, hi: 21099, line: 3 }, instance: 0 },
    ports: [{ name: 'port', kind: 'single' }],
    portsDeclared: false,
    shared: [],
    sharedKept: [],
    host: '0.0.0.0',
    env: {},
    templates: [],
    cwd: ABS,
    handoff: 'release',
    ready: { kind: 'tcp' },
    dependsOn: [{ service: 'engine', condition: 'ready', line: 22 }],
    restart: { policy: 'no', limit: 3 },
    stopGraceMs: 10_000,
    job: false,
    logs: 'file',
    strays: [],
    scheme: 'http',
    oneShot: false,
  });
  assert.deepEqual(svc(s, 'prep').source, { kind: 'none' });
  assert.deepEqual(svc(s, 'fixed').source, { kind: 'port', port: 23000 });
  assert.deepEqual(svc(s, 'fixed').ready, { kind: 'cmd', command: 'curl -sf http://127.0.0.1:{port}/' });
  assert.deepEqual(svc(s, 'fixed').dependsOn, [{ service: 'prep', condition: 'ready', line: 30 }]);
  assert.deepEqual(svc(s, 'ranged').source, { kind: 'range', range: { lo: 23100, hi: 23199 } });
  assert.deepEqual(svc(s, 'ranged').dependsOn, [
    { service: 'prep', condition: 'completed', line: 36 },
    { service: 'fixed', condition: 'started', line: 36 },
  ]);
  assert.equal(svc(s, 'gpu').replicas, 'gpus');
  assert.deepEqual(svc(s, 'client').source, { kind: 'none' });
  assert.equal(svc(s, 'client').job, true);
});

test('which services get a port, and from where', () => {
  const d = load('defaults.yaml');
  assert.deepEqual(d.layout, undefined);
  assert.deepEqual(svc(d, 'server').source, { kind: 'default' });
  assert.deepEqual(svc(d, 'worker').source, { kind: 'default' }, 'a non-job service listens unless it says port: none');
  assert.deepEqual(svc(d, 'job-plain').source, { kind: 'default' });
  assert.deepEqual(svc(d, 'client').source, { kind: 'none' }, 'a job gets no port unless it asks');
  assert.deepEqual(svc(load('job-port.yaml'), 'a').source, { kind: 'default' }, 'a job using {port} gets one');
  assert.deepEqual(svc(load('job-tcp.yaml'), 'a').source, { kind: 'default' }, 'a job with ready: tcp gets one');
  // A layout with a "default" band provides it; without one the built-in band is used.
  const withDefault = load('layout-default-band.yaml');
  const band = { name: 'default', lo: 22000, hi: 22999, line: 4 };
  assert.deepEqual(svc(withDefault, 'a').source, { kind: 'band', band, instance: 0 });
  assert.deepEqual(svc(withDefault, 'b').source, { kind: 'band', band, instance: 0 });
  const builtin = load('builtin-default-band.yaml');
  assert.deepEqual(svc(builtin, 'a').source, { kind: 'default' });
  assert.deepEqual(svc(builtin, 'b').source, { kind: 'default' });
});

test('inline bands keep the stack file\'s line numbers; a one-line JSON stack works too', () => {
  const s = load('inline-bands.yaml');
  assert.deepEqual(s.layout, {
    source: 'inline-bands.yaml',
    bands: [
      { name: 'engines', lo: 20000, hi: 20299, window: 100, line: 3 },
      { name: 'proxy', lo: 21000, hi: 21099, line: 6 },
    ],
  });
  const j = load('inline-json.json');
  assert.deepEqual(j.layout?.bands, [{ name: 'e', lo: 20000, hi: 20099, window: 50, line: 1 }]);
  assert.equal(svc(j, 'a').replicas, 2);
});

test('parseStack: anchors and aliases, several documents, unreadable files', () => {
  const x = parseStack('x-env: &env { A: "1" }\nservices:\n  a: { command: [a], env: *env }\n', 's.yaml', '/tmp');
  assert.deepEqual(svc(x, 'a').env, { A: '1' }, '"x-" keys hold anchors and are otherwise ignored');
  assert.throws(() => parseStack('x: 1\n', 's.yaml', '/tmp'), {
    message:
      's.yaml:1: unknown top-level key "x"; allowed keys are "layout", "bands", "services", "strict" (and "x-…" for anchors)\n' +
      's.yaml:1: no "services" key at the top level; expected services: { NAME: { command: [PROGRAM, ARG…] } }',
  });
  const anchored = parseStack('services:\n  a: { command: &cmd [srv, "{port}"], env: &env { A: "1" } }\n  b: { command: *cmd, env: *env }\n', 's.yaml', '/tmp');
  assert.deepEqual(svc(anchored, 'b').command, ['srv', '{port}']);
  assert.deepEqual(svc(anchored, 'b').env, { A: '1' });
  // An alias that names no anchor is reported once: its key counts as given (a second one is a repeat), not as read.
  assert.throws(() => parseStack('services:\n  a:\n    command: *nope\n    restart_limit: *nope2\n', 's.yaml', '/tmp'), {
    message:
      's.yaml:2: service "a": missing "command: [node, server.js, --port, "{port}"]"\n' +
      's.yaml:3: service "a": alias *nope has no matching &nope anchor\n' +
      's.yaml:4: service "a": alias *nope2 has no matching &nope2 anchor',
  });
  assert.throws(() => parseStack('services:\n  a:\n    command: [a]\n    command: *nope\n', 's.yaml', '/tmp'), {
    message: 's.yaml:4: service "a": "command" is given twice (first at line 3)',
  });
  assert.throws(() => parseStack('services:\n  a: { command: [a] }\n---\nservices: {}\n', 's.yaml', '/tmp'), {
    message: 's.yaml:3: the file holds several YAML documents ("---"); a stack is a single document',
  });
  assert.throws(() => loadStack(join(FIX, 'nope.yaml')), (e: BerthError) =>
    e.exitCode === EXIT.DATAERR && e.message === `${join(FIX, 'nope.yaml')}: cannot read stack file: no such file`);
});

test('replicaSource: window (instance + replica) of a windowed band, shared sources otherwise', () => {
  const host: HostSysctls = { ephemeral: { lo: 32768, hi: 60999 }, reserved: [], unprivilegedStart: 1024 };
  const s = load('valid-full.yaml');
  const layoutFile = 'layout.yaml';
  assert.deepEqual(replicaSource(s, svc(s, 'engine'), 0, host), { kind: 'band', band: 'engines', layoutFile, instance: 1, range: { lo: 20100, hi: 20199 } });
  assert.deepEqual(replicaSource(s, svc(s, 'engine'), 1, host), { kind: 'band', band: 'engines', layoutFile, instance: 2, range: { lo: 20200, hi: 20299 } });
  assert.deepEqual(replicaSource(s, svc(s, 'proxy'), 0, host), { kind: 'band', band: 'proxy', layoutFile, range: { lo: 21000, hi: 21099 } });
  assert.deepEqual(replicaSource(s, svc(s, 'fixed'), 0, host), { kind: 'port', port: 23000 });
  assert.deepEqual(replicaSource(s, svc(s, 'ranged'), 2, host), { kind: 'range', range: { lo: 23100, hi: 23199 } });
  assert.equal(replicaSource(s, svc(s, 'prep'), 0, host), undefined);
  const d = load('defaults.yaml');
  assert.deepEqual(replicaSource(d, svc(d, 'server'), 0, host), { kind: 'band', band: 'default', range: { lo: 1024, hi: 32767 } });
  const full: HostSysctls = { ephemeral: { lo: 1024, hi: 65535 }, reserved: [], unprivilegedStart: 1024 };
  assert.throws(() => replicaSource(d, svc(d, 'server'), 0, full), (e: BerthError) => e.exitCode === EXIT.UNAVAILABLE && /no built-in "default" band/.test(e.message));
});
