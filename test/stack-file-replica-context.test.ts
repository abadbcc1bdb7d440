/**
 * One context per replica: its placeholders and its config templates render from the same
 * value (src/stack/file/replica-context.ts), so {x} and {{x}} agree, and what a placeholder
 * may name a template may name too: a dependency's shared port ({svc.port.NAME},
 * {{svc.ports.NAME.port}}), checked at load by the same stand-in shape.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { BerthError } from '../src/errors.js';
import { parseStack, resolveTemplate, type ReplicaContext } from '../src/stack/index.js';
import { serviceNames, templateContext } from '../src/stack/file/template-context.js';
import { renderTemplateText } from '../src/stack/file/templates.js';

const dir = mkdtempSync(join(tmpdir(), 'berth-replica-context-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const ctx: ReplicaContext = {
  name: 'trainer',
  replica: 1,
  replicas: 2,
  host: '0.0.0.0',
  port: 21001,
  scheme: 'http',
  dir: '/run/data/trainer-1',
  ports: [
    { name: 'metrics', kind: 'single', ports: [21011] },
    { name: 'master', kind: 'single', ports: [21500] },
  ],
  sharedHosts: new Map([['master', '10.0.0.1']]),
  rank: { rank: 1, worldSize: 2, localRank: 1, nodeRank: 0, nodeCount: 1, node: 'n1', generation: 3 },
  endpoints: new Map([
    ['store', [{ host: '127.0.0.1', port: 22000, scheme: 'redis' }, { host: '127.0.0.1', port: 22001, scheme: 'redis' }]],
  ]),
  sharedOf: new Map([['store', { host: '10.0.0.2', ports: [{ name: 'bus', kind: 'single', ports: [22500] }] }]]),
};

test('a placeholder and a template tag of the same thing render the same text from one context', () => {
  const view = templateContext(ctx);
  const pairs: [string, string][] = [
    ['{port}', '{{port}}'],
    ['{host}', '{{host}}'],
    ['{name}', '{{name}}'],
    ['{replica}', '{{replica}}'],
    ['{dir}', '{{dir}}'],
    ['{rank}/{world_size}/{local_rank}/{node}/{generation}', '{{rank}}/{{world_size}}/{{local_rank}}/{{node}}/{{generation}}'],
    ['{ports.metrics}', '{{ports.metrics.port}}'],
    ['{ports.master.host}:{ports.master}', '{{ports.master.hostport}}'],
    ['{store.port}', '{{store.port}}'],
    ['{store.urls}', '{{store.urls}}'],
    ['{store.hostports}', '{{store.hostports}}'],
    ['{store.port.bus}', '{{store.ports.bus.port}}'],
    ['{store.port.bus.host}', '{{store.ports.bus.host}}'],
  ];
  for (const [ph, tag] of pairs) {
    assert.equal(renderTemplateText(tag, view, 't', { outerNames: serviceNames(view) }), resolveTemplate(ph, ctx), `${ph} and ${tag}`);
  }
  assert.equal(resolveTemplate('{store.port.bus}', ctx), '22500', "the dependency's shared port, not a replica's");
  // A shared port is the service's: every replica's entry has it.
  assert.equal(renderTemplateText('{{#store.replicas}}{{ports.bus.port}} {{/store.replicas}}', view, 't', { outerNames: serviceNames(view) }), '22500 22500 ');
});

test("a template may name a dependency's shared port (checked at load by the same stand-in shape); a port it lacks is still refused", () => {
  writeFileSync(join(dir, 'ok.conf.mustache'), 'bus={{store.ports.bus.hostport}}\n');
  writeFileSync(join(dir, 'typo.conf.mustache'), 'bus={{store.ports.buss.port}}\n');
  const stack = (file: string) =>
    `services:\n  store:\n    command: [s, "{port}"]\n    ports: { port: 1, bus: shared }\n  app:\n    depends_on: { store: ready }\n` +
    `    command: [a, "{port}"]\n    templates: { conf: ./${file} }\n`;
  const spec = parseStack(stack('ok.conf.mustache'), 'stack.yaml', dir);
  assert.equal(spec.services.find((s) => s.name === 'app')?.templates.length, 1);
  assert.throws(
    () => parseStack(stack('typo.conf.mustache'), 'stack.yaml', dir),
    (e: unknown) => e instanceof BerthError && e.exitCode === 65 && /typo\.conf\.mustache:1: unknown template tag \{\{store\.ports\.buss\.port\}\} \(did you mean "store\.ports\.bus\.port"\?\)/.test(e.message),
  );
});
