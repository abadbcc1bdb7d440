import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HostSysctls } from '../src/host/host-map.js';
import { checkLayout, defaultLayout, summarizeFindings } from '../src/layout/index.js';

const host = (lo: number, hi: number, reserved: [number, number][] = [], unprivilegedStart = 1024): HostSysctls => ({
  ephemeral: { lo, hi },
  reserved: reserved.map(([a, b]) => ({ lo: a, hi: b })),
  unprivilegedStart,
});
const band = (h: HostSysctls) => {
  const l = defaultLayout(h);
  assert.equal(l.source, '<default>');
  return l.bands.map((b) => ({ name: b.name, lo: b.lo, hi: b.hi }));
};

test('default host: 1024-32767 (larger than 61000-65535)', () => {
  assert.deepEqual(band(host(32768, 60999)), [{ name: 'default', lo: 1024, hi: 32767 }]);
});

test('ephemeral 9000-65499: 1024-8999', () => {
  assert.deepEqual(band(host(9000, 65499)), [{ name: 'default', lo: 1024, hi: 8999 }]);
});

test('ephemeral 1024-65535 with 20000-29999 reserved: the reserved block is usable', () => {
  assert.deepEqual(band(host(1024, 65535, [[20000, 29999]])), [{ name: 'default', lo: 20000, hi: 29999 }]);
});

test('reserved ports adjacent to the free space below the ephemeral range extend it', () => {
  assert.deepEqual(band(host(9000, 65499, [[9000, 9999], [40000, 40010]])), [{ name: 'default', lo: 1024, hi: 9999 }]);
});

test('unprivileged start 0 still never goes below 1024', () => {
  assert.deepEqual(band(host(32768, 60999, [], 0)), [{ name: 'default', lo: 1024, hi: 32767 }]);
});

test('a high unprivileged start raises the floor', () => {
  assert.deepEqual(band(host(32768, 60999, [], 20000)), [{ name: 'default', lo: 20000, hi: 32767 }]);
});

test('the upper gap wins when it is larger', () => {
  assert.deepEqual(band(host(1024, 20000)), [{ name: 'default', lo: 20001, hi: 65535 }]);
});

test('every port ephemeral and unreserved: no band, and doctor says so with a fix', () => {
  const h = host(1024, 65535);
  const l = defaultLayout(h);
  assert.deepEqual(l.bands, []);
  const f = checkLayout(l, h).find((x) => x.code === 'no-bands');
  assert.ok(f);
  assert.equal(f.severity, 'error');
  assert.equal(f.fixes?.[0]?.kind, 'sysctl');
  assert.equal(f.fixes[0].kind === 'sysctl' && f.fixes[0].command, 'sysctl -w net.ipv4.ip_local_port_range="32768 65535"');
  assert.equal(summarizeFindings(checkLayout(l, h)).errors, 1);
});

test('the default band passes its own check', () => {
  for (const h of [host(32768, 60999), host(9000, 65499), host(1024, 65535, [[20000, 29999]]), host(32768, 60999, [], 0)]) {
    const errors = checkLayout(defaultLayout(h), h).filter((f) => f.severity === 'error');
    assert.deepEqual(errors, []);
  }
});
