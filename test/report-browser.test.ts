// Renders the HTML report of a realistic doctor report in headless Chromium (Debian's
// /usr/bin/chromium via playwright-core, no browser download), with every network request
// blocked, and checks what a reader would see. Leaves artifacts/report.html and
// artifacts/report-screenshot.png for CI to keep.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { renderHtml } from '../src/report/html.js';
import type { PortSpaceReport } from '../src/report/port-space-report.js';
import { findProgram, NEED, skipUnless } from './helpers/require.js';

/** Debian's chromium on PATH (playwright-core drives it; no browser download). */
const CHROMIUM = findProgram('chromium') ?? '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('../artifacts/', import.meta.url));
const HTML_PATH = join(ARTIFACTS, 'report.html');
const SHOT_PATH = join(ARTIFACTS, 'report-screenshot.png');
const fixture = JSON.parse(readFileSync(new URL('./fixtures/reports/doctor-rl.json', import.meta.url), 'utf8')) as PortSpaceReport;

const skip = skipUnless('the HTML report browser tests', NEED.chromium);
const missing = skip !== false;

let profile = '';
let ctx: BrowserContext | undefined;
let page: Page;
const fileUrl = pathToFileURL(HTML_PATH).href;
const allowed = new Set<string>();
const blocked: string[] = [];
const consoleErrors: string[] = [];
const dialogs: string[] = [];

async function launch(javaScriptEnabled: boolean, dir: string): Promise<BrowserContext> {
  const c = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    javaScriptEnabled,
    viewport: { width: 1320, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  // The page must need nothing but itself: any other request fails the test.
  await c.route('**', (route) => {
    const url = route.request().url();
    if (allowed.has(url)) return route.continue();
    blocked.push(url);
    return route.abort('blockedbyclient');
  });
  return c;
}

/** Write the report's page under artifacts/ and open it in a new tab that records errors. */
async function open(c: BrowserContext, report: PortSpaceReport, htmlPath: string): Promise<Page> {
  writeFileSync(htmlPath, renderHtml(report));
  const url = pathToFileURL(htmlPath).href;
  allowed.add(url);
  const p = await c.newPage();
  p.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') consoleErrors.push(`${m.type()}: ${m.text()}`);
  });
  p.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message}`));
  p.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  await p.goto(url, { waitUntil: 'load' });
  return p;
}

/** Texts of every strip that overlap each other or leave their strip. */
function textOverlaps(p: Page): Promise<string[]> {
  return p.evaluate(() => {
    const bad: string[] = [];
    for (const svg of document.querySelectorAll('svg.strip')) {
      const boxes = [...svg.querySelectorAll('text')].map((t) => ({ t: t.textContent ?? '', r: t.getBoundingClientRect() }));
      for (let i = 0; i < boxes.length; i++) {
        for (let j = i + 1; j < boxes.length; j++) {
          const a = boxes[i]!.r;
          const b = boxes[j]!.r;
          const ox = Math.min(a.right, b.right) - Math.max(a.left, b.left);
          const oy = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
          if (ox > 1 && oy > 1) bad.push(`${svg.id}: "${boxes[i]!.t}" / "${boxes[j]!.t}"`);
        }
      }
      const s = svg.getBoundingClientRect();
      for (const { t, r } of boxes) if (r.left < s.left - 1 || r.right > s.right + 1 || r.bottom > s.bottom + 1 || r.top < s.top - 1) bad.push(`${svg.id}: "${t}" outside`);
    }
    return bad;
  });
}

/**
 * A busy page: the kernel's default ephemeral range, twenty small bands, a hundred ports
 * crowded with listeners, TIME_WAIT sockets and leases, and a single asked port.
 */
function busyReport(): PortSpaceReport {
  const sockets: PortSpaceReport['sockets'] = [];
  const owner = (pid: number, comm: string) => [{ pid, comm, cmdline: [comm, '--worker', String(pid)], uid: 1000 }];
  sockets.push({ family: 4, localAddress: '127.0.0.1', localPort: 8000, remoteAddress: '0.0.0.0', remotePort: 0, state: 'LISTEN', uid: 1000, inode: 900, owners: owner(3100, 'uvicorn') });
  for (let p = 30000; p < 30100; p++) {
    if (p % 3 === 0) sockets.push({ family: 6, localAddress: '::', localPort: p, remoteAddress: '::', remotePort: 0, state: 'LISTEN', uid: 1000, inode: 1000 + p, owners: owner(4000 + p - 30000, 'ray::Worker') });
    for (let k = 0; k < 4; k++) sockets.push({ family: 4, localAddress: '127.0.0.1', localPort: p, remoteAddress: '127.0.0.1', remotePort: 40000 + k, state: 'TIME_WAIT', uid: 0, inode: 0 });
  }
  for (let p = 40000; p < 40010; p++) sockets.push({ family: 4, localAddress: '10.0.0.2', localPort: p, remoteAddress: '10.0.0.9', remotePort: 443, state: 'ESTABLISHED', uid: 1000, inode: 5000 + p, owners: owner(7000, 'python3') });
  const leases: PortSpaceReport['leases'] = [];
  for (let p = 30001; p < 30100; p += 4) leases.push({ port: p, pid: 4000, name: `worker-${p - 30001}`, createdAt: 1741944000000, createdBy: 3999, netns: 'net:[4026532000]', live: p % 8 !== 5 });
  // Twenty narrow bands side by side: their labels must fall back to names and still not collide.
  const bands = Array.from({ length: 20 }, (_, i) => ({ name: `svc${i}`, lo: 2000 + i * 100, hi: 2099 + i * 100, window: 10 }));
  return {
    kind: 'doctor',
    layout: { source: 'many-bands.yaml', bands },
    generatedAt: '2025-03-14T10:00:00.000Z',
    hostname: 'laptop',
    host: { ephemeral: { lo: 32768, hi: 60999 }, reserved: [], unprivilegedStart: 1024, netns: 'net:[4026532000]', ipv6: true, unreservedEphemeral: [{ lo: 32768, hi: 60999 }], skippedLines: 0 },
    ranges: [{ lo: 8000, hi: 8000 }, { lo: 30000, hi: 30099 }, { lo: 40000, hi: 40009 }],
    findings: [],
    summary: { errors: 0, warnings: 0, infos: 0 },
    sockets,
    socketCounts: { LISTEN: 35, ESTABLISHED: 10, TIME_WAIT: 400 },
    leases,
  };
}

before(async () => {
  if (missing) return;
  mkdirSync(ARTIFACTS, { recursive: true });
  profile = mkdtempSync(join(tmpdir(), 'berth-chromium-'));
  ctx = await launch(true, profile);
  page = await open(ctx, fixture, HTML_PATH);
});

after(async () => {
  await ctx?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});


test('full strip, band labels, ephemeral range and a known listener are drawn', { skip }, async () => {
  await page.locator('#strip-full').waitFor({ state: 'visible' });
  for (const b of fixture.layout!.bands) {
    const label = page.locator(`#strip-full .band[data-band="${b.name}"] .band-label`);
    assert.equal(await label.count(), 1, `label of band ${b.name}`);
    assert.ok(await label.isVisible(), `label of band ${b.name} visible`);
    assert.equal(await label.textContent(), `${b.name} ${b.lo}-${b.hi}`);
    const box = await page.locator(`#strip-full .band[data-band="${b.name}"] .band-rect`).boundingBox();
    assert.ok(box && box.width >= 2 && box.height > 10, `band ${b.name} rectangle has a visible size`);
  }
  const eph = page.locator('#ephemeral');
  assert.ok(await eph.isVisible());
  assert.equal(await eph.getAttribute('data-lo'), '9000');
  assert.equal(await eph.getAttribute('data-hi'), '65499');
  const ebox = await eph.boundingBox();
  const sbox = await page.locator('#strip-full .free').boundingBox();
  // 9000-65499 is 86% of the port space: the rectangle must be about that share of the strip.
  assert.ok(ebox && sbox && Math.abs(ebox.width / sbox.width - 56500 / 65536) < 0.01, 'ephemeral rect is to scale');

  const listener = page.locator('#strip-full .listener[data-port="7000"][data-pid="41233"]');
  assert.equal(await listener.count(), 1);
  assert.ok(await listener.isVisible());
  assert.match((await listener.locator('title').textContent()) ?? '', /pid 41233 \(python3\)/);
  // The inline script (allowed by its CSP hash) shows the hover text at once.
  // (In the full strip 7000 and 7100 are under 2 px apart and their marks stack; hover the zoom.)
  await page.locator('#zooms .listener[data-port="7000"][data-pid="41233"] .mk-listener').first().hover();
  const detail = page.locator('#detail');
  await detail.waitFor({ state: 'visible', timeout: 2000 });
  assert.match((await detail.textContent()) ?? '', /LISTEN 0\.0\.0\.0:7000 .*\n.*pid 41233 \(python3\)/);
  // Zoomed strip for every band and the asked range.
  assert.equal(await page.locator('svg.strip.zoom').count(), fixture.layout!.bands.length + fixture.ranges.length);
  assert.equal(await page.locator('#zooms .listener[data-port="7100"] .mk-label').textContent(), '7100 python3 41240');
});

test('findings show severity and the exact fixes as copyable code', { skip }, async () => {
  const f = page.locator('#findings .finding[data-code="band-in-ephemeral"]');
  assert.ok(await f.isVisible());
  assert.match((await f.locator('.sev').textContent()) ?? '', /ERROR/);
  const codes = await f.locator('pre code').allTextContents();
  assert.deepEqual(codes, ['sudo sysctl -w net.ipv4.ip_local_reserved_ports=9000-9599,20000-20999,50051', 'rollout: { range: 6000-6999, window: 100 }']);
  assert.equal(await page.locator('#findings .finding').count(), 3);
});

test('no network, no console errors, hostile command lines stay text', { skip }, async () => {
  assert.deepEqual(blocked, [], 'the page requested something besides itself');
  assert.deepEqual(consoleErrors, []);
  assert.deepEqual(dialogs, [], 'a command line from the socket table was executed as script');
  assert.equal(await page.locator('script').count(), 2);
  const cell = await page.locator('#sockets tr[data-port="9400"] td.cmd').textContent();
  assert.ok(cell?.includes("</script><script>alert(1)</script><!--"), `command shown as text: ${cell}`);
  assert.ok(cell?.includes('a\\u202eb'), 'bidi override shown escaped');
  assert.ok((await page.locator('#sockets tr[data-port="9400"]').textContent())?.includes('evil\\x1b[31m'));
});

test('the embedded JSON is the report, unchanged', { skip }, async () => {
  const raw = await page.locator('#berth-data').textContent();
  assert.equal(await page.locator('#berth-data').getAttribute('type'), 'application/json');
  assert.deepEqual(JSON.parse(raw ?? ''), fixture);
});

test('no two texts of a strip overlap in the real font', { skip }, async () => {
  assert.deepEqual(await textOverlaps(page), []);
});

test('screenshot saved as a CI artifact', { skip }, async () => {
  // Move off the marks so the hover bar (shown by an earlier test) is not in the picture.
  await page.mouse.move(2, 2);
  await page.locator('#detail').waitFor({ state: 'hidden', timeout: 2000 });
  await page.screenshot({ path: SHOT_PATH, fullPage: true });
  assert.ok(readFileSync(SHOT_PATH).length > 10_000);
  // The picture alone (strips and legend), small enough for a README.
  await page.locator('#port-space').screenshot({ path: join(ARTIFACTS, 'report-port-space.png') });
});

test('the page renders fully without JavaScript', { skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-chromium-nojs-'));
  const c = await launch(false, dir);
  try {
    allowed.add(fileUrl);
    const p = c.pages()[0] ?? (await c.newPage());
    await p.goto(fileUrl, { waitUntil: 'load' });
    assert.ok(await p.locator('#strip-full').isVisible());
    assert.ok(await p.locator('#ephemeral').isVisible());
    assert.equal(await p.locator('#strip-full .band .band-label').count(), fixture.layout!.bands.length);
    assert.match((await p.locator('#ephemeral title').textContent()) ?? '', /9000-65499/);
    assert.deepEqual(blocked, []);
  } finally {
    await c.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a crowded page stays legible: no overlaps, no errors, exact JSON', { skip }, async () => {
  const report = busyReport();
  const p = await open(ctx!, report, join(ARTIFACTS, 'report-busy.html'));
  try {
    assert.ok(await p.locator('#strip-full').isVisible());
    assert.equal(await p.locator('#strip-full .band').count(), 20);
    // Too crowded to name each band in the full strip: one label for the run, all named in the overview.
    assert.equal(await p.locator('#strip-full .band-group .band-label').textContent(), '20 bands 2000-3999');
    assert.equal(await p.locator('#strip-layout .band[data-band="svc7"] .band-label').textContent(), 'svc7 2700-2799');
    assert.equal(await p.locator('svg.strip.zoom').count(), 23);
    assert.equal(await p.locator('#strip-full .listener[data-port="30003"][data-pid="4003"]').count(), 1);
    assert.deepEqual(await textOverlaps(p), []);
    assert.deepEqual(JSON.parse((await p.locator('#berth-data').textContent()) ?? ''), report);
    assert.equal(await p.locator('#sockets tbody tr').count(), report.sockets.length);
    await p.screenshot({ path: join(ARTIFACTS, 'report-busy-screenshot.png'), fullPage: true });
    assert.deepEqual(consoleErrors, []);
    assert.deepEqual(blocked, []);
  } finally {
    await p.close();
  }
});
