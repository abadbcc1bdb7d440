import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { planBlockStarts } from '../src/allocate/plan-block.js';
import { planCandidates, type PlanHost } from '../src/allocate/plan.js';
import type { PortSource } from '../src/allocate/allocation-types.js';
import { wellKnownFindings } from '../src/layout/check-well-known.js';
import { defaultLayout, parseLayout } from '../src/layout/index.js';
import { WELL_KNOWN_PORTS, skippedByDefaultBand, wellKnownIn, wellKnownPort } from '../src/layout/well-known-ports.js';
import { berth, tempStateDir } from './helpers/cli.js';
import { requireNetns } from './helpers/netns.js';

const host: PlanHost = { ephemeral: { lo: 32768, hi: 60999 }, reserved: [], unprivilegedStart: 1024, sockets: [] };
const defaultSource = (): PortSource => {
  const b = defaultLayout(host).bands[0]!;
  return { kind: 'band', band: b.name, range: { lo: b.lo, hi: b.hi } };
};

test('the list: sorted, distinct, above 1024, every port names its programs; the ports the issue names are in it', () => {
  const ports = WELL_KNOWN_PORTS.map((w) => w.port);
  assert.deepEqual(ports, [...new Set(ports)].sort((a, b) => a - b));
  for (const w of WELL_KNOWN_PORTS) {
    assert.ok(w.port >= 1024 && w.port <= 65535, String(w.port));
    assert.match(w.programs, /\w{3}/);
  }
  for (const p of [3000, 5432, 6379, 8000, 8080, 8265, 8888, 29500, 30000, 6006, 9090, 2379, 2380, 10001, 52365]) assert.ok(wellKnownPort(p), `${p} missing`);
  assert.match(wellKnownPort(29500)!.programs, /torch\.distributed/);
  assert.match(wellKnownPort(8265)!.programs, /Ray dashboard/);
  assert.deepEqual(wellKnownIn({ lo: 8000, hi: 8002 }).map((w) => w.port), [8000, 8001, 8002]);
});

test('the built-in default band never plans a listed port; a user band, a range and a port do', () => {
  const src = defaultSource();
  assert.deepEqual(src.range, { lo: 1024, hi: 32767 });
  const plan = planCandidates({ source: src, host });
  const got = new Set(plan.candidates);
  for (const w of WELL_KNOWN_PORTS) if (w.port <= 32767) assert.ok(!got.has(w.port), `default band planned ${w.port}`);
  const listedInside = WELL_KNOWN_PORTS.filter((w) => w.port <= 32767).length;
  assert.equal(plan.candidates.length, 32767 - 1024 + 1 - listedInside);
  assert.equal(plan.report.considered, plan.candidates.length, 'skipped ports are not part of the band, not "excluded"');

  const user: PortSource = { kind: 'band', band: 'default', layoutFile: 'mine.yaml', range: { lo: 7990, hi: 8010 } };
  assert.ok(planCandidates({ source: user, host }).candidates.includes(8000), 'a user band named "default" is taken as written');
  assert.ok(planCandidates({ source: { kind: 'band', band: 'engines', range: { lo: 7990, hi: 8010 } }, host }).candidates.includes(8000));
  assert.ok(planCandidates({ source: { kind: 'range', range: { lo: 7990, hi: 8010 } }, host }).candidates.includes(8000));
  assert.deepEqual(planCandidates({ source: { kind: 'port', port: 8000 }, host }).candidates, [8000]);
  assert.equal(skippedByDefaultBand({ kind: 'band', band: 'default' }, 1025), false);
});

test('a block in the built-in default band never spans a listed port', () => {
  const src = defaultSource();
  const { starts } = planBlockStarts(planCandidates({ source: src, host }).candidates, 100);
  assert.ok(starts.length > 0);
  for (const s of starts) {
    const hit = wellKnownIn({ lo: s, hi: s + 99 });
    assert.deepEqual(hit, [], `block ${s}-${s + 99} spans ${hit.map((h) => h.port).join(',')}`);
  }
  assert.ok(!starts.some((s) => s <= 8000 && s + 99 >= 8000));
});

test('doctor notes a user band with listed ports (info, naming programs); nothing for the default layout or a clean band', () => {
  const layout = parseLayout('bands:\n  engines: { range: 7000-8999, window: 100 }\n  clean: { range: 20100-20199 }\n', 'l.yaml');
  const fs = wellKnownFindings(layout);
  assert.equal(fs.length, 1);
  const f = fs[0]!;
  assert.equal(f.severity, 'info');
  assert.equal(f.code, 'band-service-ports');
  assert.equal(f.band, 'engines');
  assert.match(f.message, /^l\.yaml:2: band "engines" 7000-8999 contains these 13 ports/);
  assert.match(f.message, /8000 \(vLLM OpenAI server/);
  assert.match(f.message, /8265 \(Ray dashboard/);
  assert.deepEqual(f.ranges?.[0], { lo: 7860, hi: 7860 });
  assert.deepEqual(wellKnownFindings(defaultLayout(host)), []);
});

test('berth port from the built-in band skips listed ports; from a user band it does not (netns, real CLI)', async (t) => {
  if (!requireNetns(t)) return;
  // Every port is ephemeral except the reserved 2375-2381, so that is the default band:
  // 2375, 2376 (Docker), 2379, 2380 (etcd) are listed, 2377, 2378, 2381 are not.
  const netns = { ephemeral: '1024 65535', reserved: '2375-2381' };
  const env = { BERTH_STATE_DIR: tempStateDir() };
  const three = await berth(['port', '--count', '3', '--ttl', '1m'], { netns, env });
  assert.equal(three.code, 0, three.stderr);
  assert.deepEqual(three.stdout.trim().split(/\s+/).map(Number).sort(), [2377, 2378, 2381]);
  const four = await berth(['port', '--count', '4'], { netns, env: { BERTH_STATE_DIR: tempStateDir() } });
  assert.equal(four.code, 69, four.stdout + four.stderr);
  const dir = mkdtempSync(join(tmpdir(), 'berth-wk-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'l.yaml');
  writeFileSync(file, 'bands:\n  docker: { range: 2375-2381 }\n');
  const all = await berth(['port', '--layout', file, '--band', 'docker', '--count', '7', '--ttl', '1m'], { netns, env: { BERTH_STATE_DIR: tempStateDir() } });
  assert.equal(all.code, 0, all.stderr);
  assert.equal(all.stdout.trim().split(/\s+/).length, 7);
  const doc = await berth(['doctor', '--layout', file, '--json'], { netns, env });
  const notes = JSON.parse(doc.stdout).findings.filter((x: { code: string }) => x.code === 'band-service-ports');
  assert.equal(notes.length, 1);
  assert.match(notes[0].message, /2379 \(etcd client\), 2380 \(etcd peer\)/);
  const text = await berth(['doctor', '--layout', file], { netns, env });
  assert.match(text.stdout, /band-service-ports|2379 \(etcd client\)/);
});

test('docs/stack.md lists exactly these ports', () => {
  const doc = readFileSync('docs/stack.md', 'utf8');
  const table = doc.split('| ports | programs |')[1]?.split('\n\n')[0];
  assert.ok(table, 'docs/stack.md has the well-known ports table');
  const inDoc = new Set<number>();
  for (const m of table.matchAll(/\b(\d{4,5})(?:-(\d{4,5}))?\b/g)) {
    const lo = Number(m[1]);
    for (let p = lo; p <= Number(m[2] ?? lo); p++) inDoc.add(p);
  }
  assert.deepEqual([...inDoc].sort((a, b) => a - b), WELL_KNOWN_PORTS.map((w) => w.port));
});

test('berth up: a service on the built-in band gets a set that skips listed ports (netns, real CLI)', { timeout: 120_000 }, async (t) => {
  if (!requireNetns(t)) return;
  const dir = mkdtempSync(join(tmpdir(), 'berth-wk-up-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'stack.yaml');
  writeFileSync(
    file,
    `services:
  svc:
    ports: { a: 1, b: 1, c: 1 }
    command: [/usr/bin/python3, -c, "import socket,sys,time; s=[socket.create_server(('127.0.0.1', int(p))) for p in sys.argv[1:]]; time.sleep(60)", "{ports.a}", "{ports.b}", "{ports.c}"]
    ready: tcp
  done:
    depends_on: { svc: ready }
    job: true
    command: ["true"]
`,
  );
  // As above: the built-in band is 2375-2381, whose free ports are 2377, 2378 and 2381.
  const r = await berth(['up', file, '--run-dir', join(dir, 'run')], { netns: { ephemeral: '1024 65535', reserved: '2375-2381' }, env: { BERTH_STATE_DIR: join(dir, 'state') }, timeoutMs: 100_000 });
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(readFileSync(join(dir, 'run', 'endpoints.json'), 'utf8')) as { replicas: { service: string; ports?: Record<string, number> }[] };
  assert.deepEqual(doc.replicas.find((x) => x.service === 'svc')?.ports, { a: 2377, b: 2378, c: 2381 });
});
