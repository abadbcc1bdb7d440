// The HTML page as a string (the browser test renders it): self-contained, escaped, and
// carrying the report JSON intact. Runs without Chromium.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { renderHtml } from '../src/report/html.js';
import type { PortSpaceReport } from '../src/report/port-space-report.js';

const load = (): PortSpaceReport => JSON.parse(readFileSync(new URL('./fixtures/reports/doctor-rl.json', import.meta.url), 'utf8')) as PortSpaceReport;

function embedded(html: string): unknown {
  const m = /<script type="application\/json" id="berth-data">([\s\S]*?)<\/script>/.exec(html);
  assert.ok(m, 'embedded JSON present');
  return JSON.parse(m[1]!);
}

describe('renderHtml', () => {
  const report = load();
  const html = renderHtml(report);

  test('one self-contained file: nothing loaded from anywhere', () => {
    assert.ok(html.startsWith('<!DOCTYPE html>'));
    assert.doesNotMatch(html, /\b(?:src|href)\s*=/i, 'no src/href attributes at all');
    assert.doesNotMatch(html, /@import|url\((?!#)/i, 'CSS references only in-page patterns');
    assert.doesNotMatch(html, /https?:\/\/(?!www\.w3\.org\/2000\/svg")(?!hub\.example\.org)(?!10\.2\.0\.7)/, 'no URL besides the SVG namespace and the fixture\'s own command lines');
    assert.match(html, /<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;;/);
  });

  test('the CSP hash matches the one inline script', () => {
    const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)];
    assert.equal(scripts.length, 1);
    const hash = createHash('sha256').update(scripts[0]![1]!).digest('base64');
    assert.ok(html.includes(`script-src &#39;sha256-${hash}&#39;`));
  });

  test('hostile text cannot close a script or open a comment', () => {
    assert.equal(html.match(/<\/script/gi)?.length, 2, 'only the two real script ends');
    assert.equal(html.match(/<!--/g), null);
    assert.ok(!html.includes('\u202e') && !html.includes('\u001b'), 'controls and bidi overrides escaped');
    assert.ok(html.includes('&#60;/script&#62;&#60;script&#62;alert(1)'), 'shown as text in the table');
  });

  test('the embedded JSON is the report', () => {
    assert.deepEqual(embedded(html), report);
  });

  test('stable ids and classes the CLI tests and users rely on', () => {
    assert.equal(html.match(/id="strip-full"/g)?.length, 1);
    assert.equal(html.match(/id="ephemeral"/g)?.length, 1);
    assert.equal(html.match(/id="findings"/g)?.length, 1);
    for (const b of report.layout!.bands) assert.match(html, new RegExp(`<g class="band tip" data-band="${b.name}"`));
    assert.match(html, /<g class="listener tip" data-port="7000" data-pid="41233"/);
  });

  test('deterministic: the same report gives the same bytes', () => {
    assert.equal(renderHtml(load()), html);
  });

  test('a bare inspect report (no layout, sockets, leases, privileged ports) renders', () => {
    const r: PortSpaceReport = {
      kind: 'inspect',
      generatedAt: 'not a date',
      hostname: 'h<o>st',
      host: { ephemeral: { lo: 1024, hi: 65535 }, reserved: [], unprivilegedStart: 0, netns: 'net:[1]', ipv6: false, unreservedEphemeral: [{ lo: 1024, hi: 65535 }], skippedLines: 3 },
      ranges: [{ lo: 0, hi: 0 }],
      findings: [],
      summary: { errors: 0, warnings: 0, infos: 0 },
      sockets: [],
      socketCounts: {},
      leases: [{ port: 0, createdAt: Number.NaN, createdBy: 1, netns: 'net:[1]', live: true, expiresAt: 5 }],
    };
    const out = renderHtml(r);
    assert.ok(out.includes('<title>berth inspect — h&#60;o&#62;st</title>'));
    assert.ok(!out.includes('id="privileged"'), 'no privileged range when the start is 0');
    assert.ok(out.includes('No sockets in the bands or asked ranges.'));
    assert.ok(!out.includes('NaN'));
    assert.deepEqual(embedded(out), JSON.parse(JSON.stringify(r)));
  });
});
