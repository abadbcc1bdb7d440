/**
 * A template's replica entries (issue 21 item 7): every entry of SVC.replicas carries its rank,
 * node and node rank, so a loop over a multi-node service labels each replica with its own
 * node; a name an entry lacks is refused at load (65), not taken from the outer context as
 * mustache would; a service named like a field of every template is told what to rename.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { BerthError } from '../src/errors.js';
import { parseStack } from '../src/stack/index.js';
import { serviceNames, templateContext } from '../src/stack/file/template-context.js';
import { renderTemplateText } from '../src/stack/file/templates.js';

const dir = mkdtempSync(join(tmpdir(), 'berth-template-entries-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const rank = (node: string, nodeRank: number) => ({ rank: nodeRank, worldSize: 3, localRank: 0, nodeRank, nodeCount: 3, node });

test('every replica entry has its own rank, node and node rank (Prometheus labels of node-exporters on 3 nodes)', () => {
  const ctx = templateContext({
    name: 'prometheus',
    replica: 0,
    replicas: 1,
    host: '127.0.0.1',
    port: 9090,
    rank: rank('n1', 0),
    endpoints: new Map([
      ['exporter', [
        { host: '10.0.0.1', port: 9100, node: 'n1', nodeRank: 0 },
        { host: '10.0.0.2', port: 9100, node: 'n2', nodeRank: 1 },
        { host: '10.0.0.3', port: 9100, node: 'n3', nodeRank: 2 },
      ]],
    ]),
  });
  const tpl = "{{#exporter.replicas}}- targets: ['{{hostport}}'] labels: { node: {{node}}, rank: {{rank}}, node_rank: {{node_rank}} }\n{{/exporter.replicas}}";
  assert.equal(
    renderTemplateText(tpl, ctx, 'prometheus.yml', { outerNames: serviceNames(ctx) }),
    "- targets: ['10.0.0.1:9100'] labels: { node: n1, rank: 0, node_rank: 0 }\n- targets: ['10.0.0.2:9100'] labels: { node: n2, rank: 1, node_rank: 1 }\n- targets: ['10.0.0.3:9100'] labels: { node: n3, rank: 2, node_rank: 2 }\n",
  );
  // On one host an endpoint carries no node: it runs on the rendering replica's.
  const one = templateContext({ name: 'p', replica: 0, replicas: 1, host: '127.0.0.1', rank: rank('h', 0), endpoints: new Map([['e', [{ host: '127.0.0.1', port: 1 }, { host: '127.0.0.1', port: 2 }]]]) });
  assert.equal(renderTemplateText('{{#e.replicas}}{{node}}/{{rank}}/{{node_rank}} {{/e.replicas}}', one, 't'), 'h/0/0 h/1/0 ');
});

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

test('a name the entries lack, inside a loop over them, is refused at load with both lines', () => {
  writeFileSync(join(dir, 'outer.conf.mustache'), '# every engine\n{{#engine.replicas}}\nserver {{hostport}} data={{dir}} of {{engine.count}};\n{{/engine.replicas}}\n');
  const m = refusal(`services:
  engine:
    replicas: 2
    command: [e, "{port}"]
  proxy:
    templates: { conf: outer.conf.mustache }
    command: [nginx, -c, "{templates.conf}"]
    depends_on: { engine: ready }
`);
  assert.match(m, /stack\.yaml:6: service "proxy": template "conf": .*outer\.conf\.mustache:3: \{\{dir\}\} inside \{\{#engine\.replicas\}\} is not a field of its entries, so mustache would give the dir of the outer context \(the same for every entry\); an entry has: name, index, host, port, hostport, url, ports, first, last, self, rank, node, node_rank/);
  // {{engine.count}} names the service by path: no ambiguity, no error.
  assert.doesNotMatch(m, /engine\.count/);
});

test('a service named like a field of every template ("node"): the error says so and what to rename', () => {
  writeFileSync(join(dir, 'node.conf.mustache'), 'label {{node}}\nscrape {{node.hostport}}\n');
  const m = refusal(`services:
  node:
    command: [node-exporter, "{port}"]
  prometheus:
    templates: { conf: node.conf.mustache }
    command: [prometheus, "{templates.conf}"]
    depends_on: { node: ready }
`);
  assert.match(m, /stack\.yaml:5: service "prometheus": template "conf": .*node\.conf\.mustache:2 uses \{\{node\.hostport\}\}, but "node" is a field of every template \(this replica's node name\), so service "node" is not reachable as \{\{node\.…\}\}: rename the service \(e\.g\. "node-svc"/);
  assert.doesNotMatch(m, /unknown template tag/, 'one message, not a second "unknown tag"');
  // {{node}} alone is this replica's node, with or without a dependency called so.
  writeFileSync(join(dir, 'label.conf.mustache'), 'label {{node}}\n');
  assert.doesNotThrow(() =>
    parseStack(`services:
  node:
    command: [node-exporter, "{port}"]
  prometheus:
    templates: { conf: label.conf.mustache }
    command: [prometheus, "{templates.conf}"]
`, 'stack.yaml', dir));
});
