/**
 * `templates:` in stack files: load-time checks (exit 65 with the stack file's line and the
 * template's own line) and the {templates.NAME} placeholder. Rendering for real is in
 * test/recipes-servers.test.ts (nginx, haproxy) and test/stack-file-templates-*.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { BerthError } from '../src/errors.js';
import { parseStack, resolveTemplate } from '../src/stack/index.js';

const dir = mkdtempSync(join(tmpdir(), 'berth-stack-templates-'));
after(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(join(dir, 'good.conf.mustache'), 'upstream e {\n{{#engine.replicas}}\n  server {{hostport}};\n{{/engine.replicas}}\n}\nlisten {{port}};\n');
writeFileSync(join(dir, 'typo.conf.mustache'), 'upstream e {\n{{#engine.replicas}}\n  server {{hostprot}};\n{{/engine.replicas}}\n}\n');
writeFileSync(join(dir, 'other.conf.mustache'), 'server {{db.hostport}};\n');

function stack(proxy: string): string {
  return `services:
  engine:
    replicas: 2
    command: [node, e.js, "{port}"]
  db:
    command: [node, db.js, "{port}"]
  proxy:
${proxy}
`;
}

function refusal(text: string): string {
  try {
    parseStack(text, 'stack.yaml', dir);
  } catch (e) {
    assert.ok(e instanceof BerthError);
    assert.equal(e.exitCode, 65);
    return e.message;
  }
  assert.fail('the stack was accepted');
}

test('templates: a template over a dependency, and {templates.NAME} in the command, load', () => {
  const spec = parseStack(stack(`    templates: { conf: good.conf.mustache }
    command: [nginx, -c, "{templates.conf}"]
    depends_on: { engine: ready }`), 'stack.yaml', dir);
  const proxy = spec.services.find((s) => s.name === 'proxy')!;
  assert.deepEqual(proxy.templates, [{ name: 'conf', file: join(dir, 'good.conf.mustache'), line: 8 }]);
});

test('templates: an unknown tag names the stack line, the template file and its line', () => {
  const m = refusal(stack(`    templates: { conf: typo.conf.mustache }
    command: [nginx, -c, "{templates.conf}"]
    depends_on: { engine: ready }`));
  assert.match(m, /stack\.yaml:8: service "proxy": template "conf": .*typo\.conf\.mustache:3: unknown template tag \{\{hostprot\}\}/);
  assert.match(m, /did you mean.*hostport/);
});

test('templates: a service the template names must be a dependency', () => {
  const m = refusal(stack(`    templates: { conf: other.conf.mustache }
    command: [nginx, -c, "{templates.conf}"]
    depends_on: { engine: ready }`));
  assert.match(m, /template "conf": .*other\.conf\.mustache:1 uses \{\{db…\}\}, which is not in its depends_on; add depends_on: \{ db: ready \}/);
});

test('templates: a missing file, an unknown {templates.NAME}, a service called "templates"', () => {
  assert.match(refusal(stack(`    templates: { conf: nope.mustache }
    command: [nginx]`)), /stack\.yaml:8: service "proxy": template "conf": .*nope\.mustache does not exist/);
  assert.match(refusal(stack(`    templates: { conf: good.conf.mustache }
    command: [nginx, -c, "{templates.cnf}"]
    depends_on: { engine: ready }`)), /uses \{templates\.cnf\}, but its templates are conf \(did you mean "?conf"?\?\)/);
  assert.match(refusal(stack(`    command: [nginx, -c, "{templates.conf}"]`)), /uses \{templates\.conf\}, but the service has no "templates:"/);
  assert.match(refusal(`services:\n  templates:\n    command: [x]\n`), /the name "templates" is taken by the placeholders/);
});

test('host-only and host:port placeholders; a service\'s own replicas (peers) are reachable', () => {
  const spec = parseStack(`services:
  etcd:
    replicas: 3
    ports: { client: 1, peer: 1 }
    command: [etcd, "{etcd.hostports}", "{etcd.ports.peer}", "{etcd.hosts}"]
  client:
    command: [c, "{etcd.hostports}"]
    depends_on: { etcd: ready }
    job: true
`, 'stack.yaml', dir);
  assert.equal(spec.services.length, 2);
  const endpoints = new Map([
    ['etcd', [0, 1, 2].map((i) => ({ host: i === 2 ? '::' : '0.0.0.0', port: 2000 + 2 * i }))],
    ['one', [{ host: '::1', port: 7 }]],
  ]);
  const ctx = { name: 'client', replica: 0, host: '127.0.0.1', endpoints };
  assert.equal(resolveTemplate('{etcd.hostports}', ctx), '127.0.0.1:2000,127.0.0.1:2002,[::1]:2004');
  assert.equal(resolveTemplate('{etcd.hosts}', ctx), '127.0.0.1,127.0.0.1,::1');
  assert.equal(resolveTemplate('{one.host} {one.hostport}', ctx), '::1 [::1]:7');
  // One replica of several is ambiguous, as {svc.port} is; a multi-node service sees its peers on every node.
  assert.match(refusal(`services:\n  e:\n    replicas: 2\n    command: [e, "{e.hostport}"]\n`), /uses \{e\.hostport\}, but "e" has 2 replicas; use \{e\.hostports\}/);
  assert.equal(parseStack(`services:\n  e:\n    nodes: all\n    command: [e, "{e.ports}"]\n`, 'stack.yaml', dir).services.length, 1);
  assert.match(refusal(`services:\n  e:\n    nodes: all\n    command: [e, "{e.hostport}"]\n`), /uses \{e\.hostport\}, but "e" has replicas on several nodes \(nodes:\); use \{e\.hostports\}/);
});
