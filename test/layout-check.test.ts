import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { unreservedEphemeral } from '../src/host/intervals.js';
import type { HostSysctls, PortRange } from '../src/host/host-map.js';
import { checkLayout, parseLayout, summarizeFindings } from '../src/layout/index.js';
import type { Band, Finding, Fix, Layout } from '../src/layout/index.js';

const host = (lo: number, hi: number, reserved: [number, number][] = [], unprivilegedStart = 1024): HostSysctls => ({
  ephemeral: { lo, hi },
  reserved: reserved.map(([a, b]) => ({ lo: a, hi: b })),
  unprivilegedStart,
});
const CLUSTER = host(9000, 65499);
const LINUX = host(32768, 60999);

const example = (name: string): Layout => parseLayout(readFileSync(`examples/layouts/${name}`, 'utf8'), name);
const layout = (...bands: Band[]): Layout => ({ source: 'l.yaml', bands });
const codes = (fs: Finding[]) => fs.map((f) => (f.band ? `${f.code}:${f.band}` : f.code));
const only = (fs: Finding[], code: string, band?: string): Finding => {
  const hits = fs.filter((f) => f.code === code && f.band === band);
  assert.equal(hits.length, 1, `expected one ${code} for ${band}, got ${JSON.stringify(codes(fs))}`);
  return hits[0]!;
};
const sysctlOf = (f: Finding): string[] => (f.fixes ?? []).flatMap((x) => (x.kind === 'sysctl' ? [x.command] : []));
const moveOf = (f: Finding): Extract<Fix, { kind: 'band-range' }> | undefined =>
  f.fixes?.find((x): x is Extract<Fix, { kind: 'band-range' }> => x.kind === 'band-range');

const overlaps = (a: PortRange, b: PortRange) => a.lo <= b.hi && b.lo <= a.hi;

/** Whether a band could sit at lo: same size, above the floor, off the unreserved ephemeral range, clear of `avoid`. */
function validSpot(lo: number, size: number, h: HostSysctls, avoid: PortRange[]): boolean {
  const r = { lo, hi: lo + size - 1 };
  if (r.lo < Math.max(1024, h.unprivilegedStart) || r.hi > 65535) return false;
  if (unreservedEphemeral(h.ephemeral, h.reserved).some((o) => overlaps(o, r))) return false;
  return !avoid.some((o) => overlaps(o, r));
}

/** The properties the brief asks of every suggested range, checked by brute force over all starts. */
function assertGoodSuggestion(band: Band, fix: Extract<Fix, { kind: 'band-range' }>, h: HostSysctls, avoid: PortRange[]): void {
  const size = band.hi - band.lo + 1;
  const r = fix.range;
  assert.equal(fix.band, band.name);
  assert.equal(r.hi - r.lo + 1, size, 'same size');
  assert.ok(validSpot(r.lo, size, h, avoid), `${r.lo}-${r.hi} must be outside the ephemeral range, above the floor, clear of other bands`);
  const w = band.window && band.window > 1 ? band.window : 1;
  const aligned = (lo: number) => (lo - band.lo) % w === 0;
  let anyAligned = false;
  let best = Infinity;
  for (let lo = 1; lo + size - 1 <= 65535; lo++) {
    if (!aligned(lo) || !validSpot(lo, size, h, avoid)) continue;
    anyAligned = true;
    best = Math.min(best, Math.abs(lo - band.lo));
  }
  if (anyAligned) {
    assert.ok(aligned(r.lo), 'keeps window alignment');
    assert.equal(Math.abs(r.lo - band.lo), best, 'closest aligned spot');
  }
}

test('gpu-fixed-10000 on a 9000-65499 host: all ports and windows exposed; exact sysctl line; a good move', () => {
  const l = example('gpu-fixed-10000.yaml');
  const fs = checkLayout(l, CLUSTER);
  assert.deepEqual(codes(fs), ['host-ranges', 'ephemeral-low', 'band-in-ephemeral:gpu']);
  assert.deepEqual(summarizeFindings(fs), { errors: 1, warnings: 1, infos: 1 });
  const f = only(fs, 'band-in-ephemeral', 'gpu');
  assert.equal(f.severity, 'error');
  assert.equal(
    f.message,
    'gpu-fixed-10000.yaml:11: band "gpu" 10000-12047: 2048 of its 2048 ports (10000-12047) lie in the ephemeral range 9000-65499 and are not in net.ipv4.ip_local_reserved_ports, so any outgoing connection can take them; all 8 instances are exposed.',
  );
  assert.deepEqual(f.ranges, [{ lo: 10000, hi: 12047 }]);
  assert.deepEqual(sysctlOf(f), ['sysctl -w net.ipv4.ip_local_reserved_ports=10000-12047']);
  assert.match(f.fixes![0]!.description, /\/etc\/sysctl\.d\//);
  const move = moveOf(f)!;
  assert.deepEqual(move.range, { lo: 6928, hi: 8975 });
  assertGoodSuggestion(l.bands[0]!, move, CLUSTER, []);
  const low = only(fs, 'ephemeral-low');
  assert.equal(low.severity, 'warning');
  assert.deepEqual(sysctlOf(low), ['sysctl -w net.ipv4.ip_local_port_range="32768 65499"']);
});

test('gpu-fixed-10000 on a default host: clean', () => {
  const fs = checkLayout(example('gpu-fixed-10000.yaml'), LINUX);
  assert.deepEqual(codes(fs), ['host-ranges', 'band-ok:gpu']);
  assert.equal(only(fs, 'band-ok', 'gpu').message, 'gpu-fixed-10000.yaml:11: band "gpu" 10000-12047 (8 windows of 256): outside the ephemeral range 32768-60999 and at or above the unprivileged start 1024');
});

test('rl-framework on a 9000-65499 host: bands clean, host warned', () => {
  const fs = checkLayout(example('rl-framework.yaml'), CLUSTER);
  assert.deepEqual(codes(fs), ['host-ranges', 'ephemeral-low', 'band-ok:master', 'band-ok:generation', 'band-ok:gym', 'band-ok:vllm']);
  assert.deepEqual(summarizeFindings(fs), { errors: 0, warnings: 1, infos: 5 });
  assert.match(only(fs, 'ephemeral-low').message, /29500/);
});

test('rl-framework on a default host: clean', () => {
  const fs = checkLayout(example('rl-framework.yaml'), LINUX);
  assert.deepEqual(summarizeFindings(fs), { errors: 0, warnings: 0, infos: 5 });
});

test('rl-framework where every port is ephemeral: nowhere to move, one line reserves all bands', () => {
  const h = host(1024, 65535, [[40000, 40099]]);
  const fs = checkLayout(example('rl-framework.yaml'), h);
  assert.deepEqual(summarizeFindings(fs), { errors: 4, warnings: 1, infos: 2 });
  const vllm = only(fs, 'band-in-ephemeral', 'vllm');
  assert.equal(moveOf(vllm), undefined);
  assert.match(vllm.message, /all 16 instances are exposed\. No run of 1600 free ports lies at or above 1024, outside the ephemeral range and clear of the other bands, so the band cannot simply move\.$/);
  assert.deepEqual(sysctlOf(vllm), ['sysctl -w net.ipv4.ip_local_reserved_ports=7000-8599,40000-40099']);
  assert.match(vllm.fixes![0]!.description, /reserve-all/);
  const all = only(fs, 'reserve-all');
  assert.deepEqual(sysctlOf(all), ['sysctl -w net.ipv4.ip_local_reserved_ports=1400-1999,3000-5999,7000-8599,40000-40099']);
});

test('partly exposed windows are named per instance, and the sysctl line merges with what is reserved', () => {
  const vllm: Band = { name: 'vllm', lo: 7000, hi: 8599, window: 100, line: 4 };
  let f = only(checkLayout(layout(vllm), host(7800, 8199)), 'band-in-ephemeral', 'vllm');
  assert.equal(
    f.message,
    'l.yaml:4: band "vllm" 7000-8599: 400 of its 1600 ports (7800-8199) lie in the ephemeral range 7800-8199 and are not in net.ipv4.ip_local_reserved_ports, so any outgoing connection can take them; instances 8-11 of 16 are exposed.',
  );
  const h = host(7800, 65499, [[8000, 8199], [40000, 40000]]);
  f = only(checkLayout(layout(vllm), h), 'band-in-ephemeral', 'vllm');
  assert.match(f.message, /: 600 of its 1600 ports \(7800-7999,8200-8599\) lie in .*; instances 8-9, 12-15 of 16 are exposed\.$/);
  assert.deepEqual(f.ranges, [{ lo: 7800, hi: 7999 }, { lo: 8200, hi: 8599 }]);
  assert.deepEqual(sysctlOf(f), ['sysctl -w net.ipv4.ip_local_reserved_ports=7800-8599,40000']);
  assertGoodSuggestion(vllm, moveOf(f)!, h, []);
  // A single exposed port touches one window.
  f = only(checkLayout(layout(vllm), host(8599, 65499)), 'band-in-ephemeral', 'vllm');
  assert.match(f.message, /: 1 of its 1600 ports \(8599\) .*; instance 15 of 16 is exposed\.$/);
});

test('suggestions for several exposed bands stay clear of every band and of each other', () => {
  const bands: Band[] = [
    { name: 'a', lo: 40000, hi: 40999, window: 100 },
    { name: 'b', lo: 41000, hi: 41999 }, // touches a: fine
    { name: 'c', lo: 20000, hi: 32767, window: 256 }, // blocks most of the room below the ephemeral range
    { name: 'd', lo: 60000, hi: 61099, window: 50 },
  ];
  const fs = checkLayout(layout(...bands), LINUX);
  assert.deepEqual(codes(fs).filter((c) => c !== 'host-ranges'), [
    'band-in-ephemeral:a', 'band-in-ephemeral:b', 'window-remainder:c', 'band-ok:c', 'band-in-ephemeral:d', 'reserve-all',
  ]);
  const taken: PortRange[] = bands.map((b) => ({ lo: b.lo, hi: b.hi }));
  for (const name of ['a', 'b', 'd']) {
    const band = bands.find((b) => b.name === name)!;
    const move = moveOf(only(fs, 'band-in-ephemeral', name))!;
    const avoid = [...taken.filter((t) => t.lo !== band.lo)];
    assertGoodSuggestion(band, move, LINUX, [...avoid]);
    taken.push(move.range); // later bands also avoid earlier suggestions
  }
  const suggested = ['a', 'b', 'd'].map((n) => moveOf(only(fs, 'band-in-ephemeral', n))!.range);
  for (let i = 0; i < suggested.length; i++) for (let j = i + 1; j < suggested.length; j++) assert.ok(!overlaps(suggested[i]!, suggested[j]!));
  // d (61000-61099 part) is exposed only in its first 1000 ports.
  assert.match(only(fs, 'band-in-ephemeral', 'd').message, /1000 of its 1100 ports \(60000-60999\).*instances 0-19 of 22 are exposed/);
});

test('adjacent bands that touch but do not overlap are fine', () => {
  const l = parseLayout(readFileSync('test/fixtures/layouts/adjacent.yaml', 'utf8'), 'adjacent.yaml');
  const fs = checkLayout(l, LINUX);
  assert.deepEqual(summarizeFindings(fs), { errors: 0, warnings: 0, infos: 4 });
  assert.ok(!fs.some((f) => f.code === 'band-overlap'));
});

test('overlapping bands built in code are caught too, with a move for the later one', () => {
  const fs = checkLayout(layout({ name: 'a', lo: 20000, hi: 20099 }, { name: 'b', lo: 20050, hi: 20149 }), LINUX);
  const f = only(fs, 'band-overlap', 'b');
  assert.equal(f.severity, 'error');
  assert.match(f.message, /band "b" 20050-20149: overlaps band "a" 20000-20099 on ports 20050-20099/);
  assertGoodSuggestion({ name: 'b', lo: 20050, hi: 20149 }, moveOf(f)!, LINUX, [{ lo: 20000, hi: 20099 }]);
});

test('bands below the unprivileged start are errors; below 1024 otherwise a warning', () => {
  const web: Band = { name: 'web', lo: 80, hi: 99 };
  let fs = checkLayout(layout(web), LINUX);
  const f = only(fs, 'band-privileged', 'web');
  assert.equal(f.severity, 'error');
  assert.equal(f.message, 'band "web" 80-99: ports 80-99 are below net.ipv4.ip_unprivileged_port_start (1024), so only root or CAP_NET_BIND_SERVICE can bind them.');
  assert.deepEqual(moveOf(f)!.range, { lo: 1024, hi: 1043 });
  assert.deepEqual(sysctlOf(f), ['sysctl -w net.ipv4.ip_unprivileged_port_start=80']);
  fs = checkLayout(layout(web), host(32768, 60999, [], 0));
  const w = only(fs, 'band-well-known', 'web');
  assert.equal(w.severity, 'warning');
  assert.deepEqual(moveOf(w)!.range, { lo: 1024, hi: 1043 });
  // Straddling the start: only the low part is named.
  fs = checkLayout(layout({ name: 'x', lo: 1000, hi: 1100 }), host(32768, 60999, [], 1024));
  assert.deepEqual(only(fs, 'band-privileged', 'x').ranges, [{ lo: 1000, hi: 1023 }]);
});

test('a band inside the ephemeral range but fully reserved is safe, with a note to persist the reservation', () => {
  const fs = checkLayout(layout({ name: 'r', lo: 20000, hi: 29999 }), host(1024, 65535, [[20000, 29999]]));
  assert.equal(summarizeFindings(fs).errors, 0);
  const f = only(fs, 'band-reserved', 'r');
  assert.equal(f.severity, 'info');
  assert.deepEqual(f.ranges, [{ lo: 20000, hi: 29999 }]);
  assert.match(f.message, /\/etc\/sysctl\.d\//);
});

test('a small ephemeral range (counting reservations) is a warning with the sysctl line to widen it', () => {
  let f = only(checkLayout(layout({ name: 'a', lo: 20000, hi: 20099 }), host(60000, 65000)), 'ephemeral-small');
  assert.equal(f.severity, 'warning');
  assert.match(f.message, /leaves only 5001 ports for outgoing connections: /);
  assert.deepEqual(sysctlOf(f), ['sysctl -w net.ipv4.ip_local_port_range="32768 65000"']);
  f = only(checkLayout(layout({ name: 'a', lo: 20000, hi: 20099 }), host(32768, 60999, [[33000, 60000]])), 'ephemeral-small');
  assert.match(f.message, /leaves only 1231 ports for outgoing connections once the reserved ports are skipped/);
});

test('widening the ephemeral range warns about bands it would then expose', () => {
  const fs = checkLayout(layout({ name: 'hi', lo: 40000, hi: 40099 }), host(9000, 30000));
  const f = only(fs, 'ephemeral-low');
  assert.match(f.fixes![0]!.description, /Band "hi" would then lie in the ephemeral range: reserve or move it too\.$/);
});

test('a window that does not divide the band leaves ports to no instance (info)', () => {
  const f = only(checkLayout(layout({ name: 'r', lo: 7000, hi: 7099, window: 30 }), LINUX), 'window-remainder', 'r');
  assert.equal(f.severity, 'info');
  assert.equal(f.message, 'band "r" 7000-7099: window 30 fits 3 instances; the last 10 ports (7090-7099) belong to no instance');
});

test('a layout with no band is an error', () => {
  const fs = checkLayout(layout(), LINUX);
  const f = only(fs, 'no-bands');
  assert.equal(f.severity, 'error');
  assert.equal(f.message, 'l.yaml: the layout defines no band; add one under "bands:", e.g. web: { range: 20000-20099 }');
});

test('every band finding carries its band and a code; every error and warning a fix or a reason', () => {
  const l = layout(
    { name: 'a', lo: 80, hi: 99 },
    { name: 'b', lo: 40000, hi: 40999, window: 100 },
    { name: 'c', lo: 40500, hi: 40600 },
  );
  const fs = checkLayout(l, CLUSTER);
  for (const f of fs) {
    assert.ok(f.code.length > 0);
    if (f.code.startsWith('band-') || f.code.startsWith('window-')) assert.ok(f.band, f.code);
    if (f.severity !== 'info') assert.ok((f.fixes?.length ?? 0) > 0 || /cannot simply move/.test(f.message), f.code);
  }
  assert.deepEqual(summarizeFindings([]), { errors: 0, warnings: 0, infos: 0 });
});
