import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { BerthError, EXIT } from '../src/errors.js';
import { serviceNames, templateContext, } from '../src/stack/file/template-context.js';
import type { ReplicaContext } from '../src/stack/file/replica-context.js';
import { renderedName, renderTemplateFile, renderTemplateText, templateProblems, templateTagNames } from '../src/stack/file/templates.js';
import { dataErrors } from './helpers/refusal.js';

// Config-file templates: the context a replica sees, and mustache rendering of real config shapes.

/** A proxy in front of two engines (one named ports each: http + a block), as the stack would describe it. */
const proxyInput = (over: Partial<ReplicaContext> = {}): ReplicaContext => ({
  name: 'proxy',
  replica: 0,
  replicas: 1,
  host: '127.0.0.1',
  port: 21000,
  ports: [{ name: 'port', kind: 'single', ports: [21000] }],
  endpoints: new Map([
    [
      'engine',
      [
        { host: '127.0.0.1', port: 20100, ports: [{ name: 'http', kind: 'single', ports: [20100] }, { name: 'dist', kind: 'block', ports: [20110, 20111, 20112, 20113] }] },
        { host: '0.0.0.0', port: 20200, ports: [{ name: 'http', kind: 'single', ports: [20200] }, { name: 'dist', kind: 'block', ports: [20210, 20211, 20212, 20213] }] },
      ],
    ],
  ]),
  ...over,
});

const NGINX = `worker_processes 1;
events { worker_connections 64; }
http {
    upstream engines {
{{#engine.replicas}}
        server {{hostport}};
{{/engine.replicas}}
    }
    server {
        listen {{host}}:{{port}};
        location / { proxy_pass http://engines; }
        location /first { proxy_pass {{engine.url}}/; }
    }
}
`;

test('nginx upstream for 2 replicas: one server line each, nginx braces untouched, no HTML escaping', () => {
  const out = renderTemplateText(NGINX, templateContext(proxyInput()), 'nginx.conf.mustache');
  assert.equal(
    out,
    `worker_processes 1;
events { worker_connections 64; }
http {
    upstream engines {
        server 127.0.0.1:20100;
        server 127.0.0.1:20200;
    }
    server {
        listen 127.0.0.1:21000;
        location / { proxy_pass http://engines; }
        location /first { proxy_pass http://127.0.0.1:20100/; }
    }
}
`,
  );
});

test('haproxy backend for 2 replicas: named ports, index, block fields', () => {
  const tpl = `global
    maxconn 64
frontend fe
    bind {{host}}:{{ports.port.port}}
    default_backend engines
backend engines
    balance roundrobin
{{#engine.replicas}}
    server e{{index}} {{host}}:{{ports.http.port}} check  # dist {{ports.dist.range}} ({{ports.dist.count}} ports, {{ports.dist.first}}..{{ports.dist.last}})
{{/engine.replicas}}
`;
  const out = renderTemplateText(tpl, templateContext(proxyInput()), 'haproxy.cfg');
  assert.equal(
    out,
    `global
    maxconn 64
frontend fe
    bind 127.0.0.1:21000
    default_backend engines
backend engines
    balance roundrobin
    server e0 127.0.0.1:20100 check  # dist 20110-20113 (4 ports, 20110..20113)
    server e1 127.0.0.1:20200 check  # dist 20210-20213 (4 ports, 20210..20213)
`,
  );
});

test('context: joined lists, separators through first/last, IPv6 bracketed, wildcard reached on loopback', () => {
  const ctx = templateContext({
    name: 'etcd',
    replica: 1,
    replicas: 3,
    host: '::',
    port: 2379,
    endpoints: new Map([
      ['peer', [{ host: '::1', port: 2380 }, { host: '::', port: 2381 }, { host: '10.0.0.3', port: 2382 }]],
      ['host', [{ host: '127.0.0.1', port: 9 }]],
    ]),
  });
  assert.equal(ctx.hostport, '[::1]:2379');
  assert.equal(ctx.url, 'http://[::1]:2379');
  assert.equal(ctx.host, '::', 'own host is the listen address, as {host}');
  const line = renderTemplateText('{{#peer.replicas}}{{name}}{{index}}={{url}}{{^last}},{{/last}}{{/peer.replicas}}|{{peer.hostports}}|{{peer.count}}', ctx, 't');
  assert.equal(line, 'peer0=http://[::1]:2380,peer1=http://[::1]:2381,peer2=http://10.0.0.3:2382|[::1]:2380,[::1]:2381,10.0.0.3:2382|3');
  // A dependency named like an own field is reachable in `services` only.
  assert.equal(ctx.host, '::');
  assert.equal(renderTemplateText('{{#services}}{{name}}:{{port}} {{/services}}', ctx, 't'), 'peer:2380 host:9 ');
});

test('unknown tags are refused with file, line and tag, all at once (mustache alone would render "")', () => {
  const tpl = `upstream x {\n{{#engine.replicas}}\n  server {{hostprt}};\n{{/engine.replicas}}\n}\nlisten {{prot}};\n{{#nope}}x{{/nope}}\n`;
  const errors = dataErrors('nginx.conf', () => renderTemplateText(tpl, templateContext(proxyInput()), 'nginx.conf'));
  assert.equal(errors.length, 3);
  assert.match(errors[0]!, /^nginx\.conf:3: unknown template tag \{\{hostprt\}\} \(did you mean "hostport"\?\); names inside this section: name, index, host, port, hostport, url, ports, first, last, self, rank, node, node_rank$/);
  assert.match(errors[1]!, /^nginx\.conf:6: unknown template tag \{\{prot\}\} \(did you mean "port"\?\); names at the top level: name, replica, replicas, host, ports, services, port, hostport, url, engine$/);
  assert.match(errors[2]!, /^nginx\.conf:7: unknown template tag \{\{#nope\}\}/);
  assert.match(templateProblems('{{#engine.replicas}}{{#last}}{{hots}}{{/last}}{{/engine.replicas}}', templateContext(proxyInput()), 't')[0]!, /^t:1: unknown template tag \{\{hots\}\} \(did you mean "host"\?\); names inside this section: name, index, host,/);
  // Inside a list, a name its entries lack is refused, not looked up outside as mustache would
  // (every entry would get the same outer value); a path through a service is explicit.
  const ctx = templateContext(proxyInput());
  const outer = { outerNames: serviceNames(ctx) };
  assert.deepEqual(templateProblems('{{#engine.replicas}}{{engine.count}} {{#last}}{{index}}{{/last}}{{/engine.replicas}}', ctx, 't', outer), []);
  const inside = templateProblems('{{#engine.replicas}}\n{{replicas}} {{#ports.http}}{{dir}}{{/ports.http}}{{/engine.replicas}}', { ...ctx, dir: '/d' }, 't', outer);
  assert.equal(inside.length, 2, inside.join('\n'));
  assert.match(inside[0]!, /^t:2: \{\{replicas\}\} inside \{\{#engine\.replicas\}\} is not a field of its entries, so mustache would give the replicas of the outer context \(the same for every entry\); an entry has: name, index, host, port, hostport, url, ports, first, last, self, rank, node, node_rank\. Write it outside the section/);
  assert.match(inside[1]!, /^t:2: \{\{dir\}\} inside \{\{#engine\.replicas\}\}/);
});

test('syntax errors and partials name their line', () => {
  const ctx = templateContext(proxyInput());
  assert.deepEqual(dataErrors('a.conf', () => renderTemplateText('a\nb\n{{#engine.replicas}}\nx\n', ctx, 'a.conf')), [
    'a.conf:3: template syntax error: section "engine.replicas" opened here is never closed',
  ]);
  assert.deepEqual(dataErrors('b.conf', () => renderTemplateText('a\n{{port}\n', ctx, 'b.conf')), ['b.conf:2: template syntax error: the tag opened here with {{ is never closed with }}']);
  assert.deepEqual(dataErrors('c.conf', () => renderTemplateText('\n{{> other}}\n', ctx, 'c.conf')), [
    'c.conf:2: {{> other}}: partials are not supported; write the text into this file',
  ]);
});

test('a file that needs {{ }} itself switches delimiters', () => {
  const tpl = `{{=<% %>=}}\n- alert: Down\n  expr: up{instance="<% engine.hostport %>"} == 0\n  summary: "{{ $labels.instance }} is down"\n`;
  assert.equal(
    renderTemplateText(tpl, templateContext(proxyInput()), 'rules.yml'),
    `- alert: Down\n  expr: up{instance="127.0.0.1:20100"} == 0\n  summary: "{{ $labels.instance }} is down"\n`,
  );
  assert.equal(renderTemplateText('<%port%> {{x}}', templateContext(proxyInput()), 't', { tags: ['<%', '%>'] }), '21000 {{x}}');
});

test('renderTemplateFile writes atomically into the directory; unreadable files and bad dirs are named', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-templates-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const src = join(dir, 'nginx.conf.mustache');
  writeFileSync(src, NGINX);
  const out = join(dir, 'run');
  mkdirSync(out);
  const r = renderTemplateFile(src, templateContext(proxyInput()), out);
  assert.equal(r.path, join(out, 'nginx.conf'));
  assert.equal(r.source, src);
  assert.match(readFileSync(r.path, 'utf8'), /server 127\.0\.0\.1:20200;/);
  assert.equal(r.bytes, statSync(r.path).size);
  assert.deepEqual(readdirSync(out), ['nginx.conf'], 'no temporary file left');
  // Rendering again replaces the file (a restart renders anew).
  renderTemplateFile(src, templateContext(proxyInput({ port: 21001 })), out);
  assert.match(readFileSync(r.path, 'utf8'), /listen 127\.0\.0\.1:21001;/);
  assert.equal(renderTemplateFile(src, templateContext(proxyInput()), out, { name: 'n.conf' }).path, join(out, 'n.conf'));

  const missing = join(dir, 'gone.conf');
  assert.throws(() => renderTemplateFile(missing, {}, out), (e: unknown) => e instanceof BerthError && e.exitCode === EXIT.DATAERR && e.message === `template ${missing}: cannot read it: no such file`);
  assert.throws(() => renderTemplateFile(out, {}, out), (e: unknown) => e instanceof BerthError && e.exitCode === EXIT.DATAERR && /cannot read it: it is a directory/.test(e.message));
  const bad = join(dir, 'bad.conf');
  writeFileSync(bad, 'x {{nope}}\n');
  assert.throws(() => renderTemplateFile(bad, {}, out), (e: unknown) => e instanceof BerthError && e.exitCode === EXIT.DATAERR && e.message.startsWith(`${bad}:1: unknown template tag {{nope}}`));
  assert.throws(() => renderTemplateFile(src, templateContext(proxyInput()), join(dir, 'no-such-dir')), (e: unknown) => e instanceof BerthError && e.exitCode === EXIT.IOERR && /cannot write .*no-such-dir\/nginx\.conf: no such file/.test(e.message));
});

test('renderedName drops .mustache / .tmpl only', () => {
  assert.equal(renderedName('/a/nginx.conf.mustache'), 'nginx.conf');
  assert.equal(renderedName('haproxy.cfg.tmpl'), 'haproxy.cfg');
  assert.equal(renderedName('prometheus.yml'), 'prometheus.yml');
  assert.equal(renderedName('.mustache'), '.mustache');
});

test('templateTagNames: every tag\'s first name segment with its line and the section it is inside, for the load-time dependency check', () => {
  assert.deepEqual(templateTagNames(NGINX), [
    { name: 'engine', line: 5, full: '#engine.replicas' },
    { name: 'hostport', line: 6, full: 'hostport', section: 'engine.replicas' },
    { name: 'host', line: 10, full: 'host' },
    { name: 'port', line: 10, full: 'port' },
    { name: 'engine', line: 12, full: 'engine.url' },
  ]);
  assert.deepEqual(templateTagNames('{{#a}}'), []);
});
