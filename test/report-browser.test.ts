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
import type { PortSpaceReport } from '../src/report/types.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('../artifacts/', import.meta.url));
const HTML_PATH = join(ARTIFACTS, 'report.html');
const SHOT_PATH = join(ARTIFACTS, 'report-screenshot.png');
const fixture = JSON.parse(readFileSync(new URL('./fixtures/reports/doctor-rl.json', import.meta.url), 'utf8')) as PortSpaceReport;

const missing = !existsSync(CHROMIUM);
if (missing) {
  if (process.env.CI) throw new Error(`${CHROMIUM} is missing: CI must install Debian's chromium package for the browser test`);
  process.stderr.write(`\n!!! SKIPPING the HTML report browser test: ${CHROMIUM} not found (apt-get install chromium). In CI this is a failure.\n\n`);
}

let profile = '';
let ctx: BrowserContext | undefined;
let page: Page;
const fileUrl = pathToFileURL(HTML_PATH).href;
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
    if (url === fileUrl) return route.continue();
    blocked.push(url);
    return route.abort('blockedbyclient');
  });
  return c;
}

before(async () => {
  if (missing) return;
  mkdirSync(ARTIFACTS, { recursive: true });
  writeFileSync(HTML_PATH, renderHtml(fixture));
  profile = mkdtempSync(join(tmpdir(), 'berth-chromium-'));
  ctx = await launch(true, profile);
  page = ctx.pages()[0] ?? (await ctx.newPage());
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') consoleErrors.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message}`));
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  await page.goto(fileUrl, { waitUntil: 'load' });
});

after(async () => {
  await ctx?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

const skip = missing ? `${CHROMIUM} not installed` : false;

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
  const overlaps = await page.evaluate(() => {
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
      // Nothing may spill out of the strip's own box either.
      const s = svg.getBoundingClientRect();
      for (const { t, r } of boxes) if (r.left < s.left - 1 || r.right > s.right + 1 || r.bottom > s.bottom + 1 || r.top < s.top - 1) bad.push(`${svg.id}: "${t}" outside`);
    }
    return bad;
  });
  assert.deepEqual(overlaps, []);
});

test('screenshot saved as a CI artifact', { skip }, async () => {
  await page.screenshot({ path: SHOT_PATH, fullPage: true });
  assert.ok(readFileSync(SHOT_PATH).length > 10_000);
});

test('the page renders fully without JavaScript', { skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-chromium-nojs-'));
  const c = await launch(false, dir);
  try {
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
