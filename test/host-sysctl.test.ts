import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { BerthError, EXIT } from '../src/errors.js';
import {
  formatReservedPorts,
  parsePortRange,
  parseReservedPorts,
  parseUnprivilegedStart,
  readSysctls,
} from '../src/host/sysctl.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** Asserts a DATAERR whose message names the file and matches `why`. */
function throwsData(fn: () => unknown, file: string, why: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof BerthError, `expected BerthError, got ${String(e)}`);
    assert.equal(e.exitCode, EXIT.DATAERR);
    assert.ok(e.message.startsWith(`${file}: `), `message should name ${file}: ${e.message}`);
    assert.match(e.message, why);
    return true;
  });
}

test('parsePortRange reads the tab-separated kernel text', () => {
  assert.deepEqual(parsePortRange('32768\t60999\n'), { lo: 32768, hi: 60999 });
  assert.deepEqual(parsePortRange('9000 65535'), { lo: 9000, hi: 65535 });
  assert.deepEqual(parsePortRange('  1024   1024  \n'), { lo: 1024, hi: 1024 });
});

test('parsePortRange rejects bad text with a message naming the file', () => {
  const f = 'net.ipv4.ip_local_port_range';
  throwsData(() => parsePortRange(''), f, /expected two port numbers "LO HI" \(read ""\)/);
  throwsData(() => parsePortRange('32768\n'), f, /expected two port numbers/);
  throwsData(() => parsePortRange('1 2 3'), f, /expected two port numbers/);
  throwsData(() => parsePortRange('a b'), f, /ports must be whole numbers 0-65535 \(read "a b"\)/);
  throwsData(() => parsePortRange('0x10 200'), f, /whole numbers/);
  throwsData(() => parsePortRange('32768 70000'), f, /whole numbers/);
  throwsData(() => parsePortRange('60999\t32768\n'), f, /low end 60999 is above high end 32768/);
  throwsData(() => parsePortRange('x', '/p/sys/net/ipv4/ip_local_port_range'), '/p/sys/net/ipv4/ip_local_port_range', /two port/);
});

test('parseReservedPorts: empty and whitespace mean none', () => {
  assert.deepEqual(parseReservedPorts(''), []);
  assert.deepEqual(parseReservedPorts('\n'), []);
  assert.deepEqual(parseReservedPorts('  \t\n'), []);
});

test('parseReservedPorts reads ports and ranges and normalizes them', () => {
  assert.deepEqual(parseReservedPorts('8000,9000-9100\n'), [
    { lo: 8000, hi: 8000 },
    { lo: 9000, hi: 9100 },
  ]);
  // unsorted, overlapping and adjacent entries merge
  assert.deepEqual(parseReservedPorts('9050-9200,8001,9000-9100,8000, 7000 - 7001'), [
    { lo: 7000, hi: 7001 },
    { lo: 8000, hi: 8001 },
    { lo: 9000, hi: 9200 },
  ]);
  assert.deepEqual(parseReservedPorts('0-65535'), [{ lo: 0, hi: 65535 }]);
});

test('parseReservedPorts rejects bad items, naming the item and the file', () => {
  const f = 'net.ipv4.ip_local_reserved_ports';
  throwsData(() => parseReservedPorts('8000,,9000'), f, /"" is not a port number 0-65535/);
  throwsData(() => parseReservedPorts('abc'), f, /"abc" is not a port number/);
  throwsData(() => parseReservedPorts('70000'), f, /"70000" is not a port number/);
  throwsData(() => parseReservedPorts('9000-'), f, /"9000-" is not a range LO-HI/);
  throwsData(() => parseReservedPorts('9000-9100-9200'), f, /is not a range LO-HI/);
  throwsData(() => parseReservedPorts('9100-9000'), f, /range "9100-9000" has its low end above its high end/);
});

test('formatReservedPorts writes the sysctl syntax and round-trips', () => {
  assert.equal(formatReservedPorts([]), '');
  assert.equal(formatReservedPorts([{ lo: 9000, hi: 9100 }, { lo: 8000, hi: 8000 }, { lo: 8001, hi: 8002 }]), '8000-8002,9000-9100');
  const text = '8000,9000-9100,20000-23999';
  assert.equal(formatReservedPorts(parseReservedPorts(text)), text);
});

test('parseUnprivilegedStart', () => {
  assert.equal(parseUnprivilegedStart('1024\n'), 1024);
  assert.equal(parseUnprivilegedStart('0'), 0);
  const f = 'net.ipv4.ip_unprivileged_port_start';
  throwsData(() => parseUnprivilegedStart(''), f, /expected one port number 0-65535/);
  throwsData(() => parseUnprivilegedStart('-1'), f, /expected one port number/);
  throwsData(() => parseUnprivilegedStart('1024 2048'), f, /expected one port number/);
});

test('readSysctls reads a full tree', () => {
  assert.deepEqual(readSysctls(fixture('proc-basic')), {
    ephemeral: { lo: 32768, hi: 60999 },
    reserved: [
      { lo: 8000, hi: 8000 },
      { lo: 41001, hi: 41001 },
      { lo: 41003, hi: 41004 },
    ],
    unprivilegedStart: 1024,
  });
});

test('readSysctls defaults missing optional files', () => {
  assert.deepEqual(readSysctls(fixture('proc-minimal')), {
    ephemeral: { lo: 9000, hi: 65000 },
    reserved: [],
    unprivilegedStart: 1024,
  });
});

test('readSysctls names the full path of a bad file', () => {
  const root = fixture('proc-bad-sysctl');
  throwsData(() => readSysctls(root), `${root}/sys/net/ipv4/ip_local_port_range`, /low end 60999 is above high end 32768/);
});

test('readSysctls on a root without the range file is an I/O error', () => {
  assert.throws(() => readSysctls(fixture('no-such-proc')), (e: unknown) => {
    assert.ok(e instanceof BerthError);
    assert.equal(e.exitCode, EXIT.IOERR);
    assert.match(e.message, /ip_local_port_range: missing/);
    return true;
  });
});

test('readSysctls agrees with the real /proc', () => {
  const s = readSysctls();
  assert.deepEqual(s.ephemeral, parsePortRange(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'latin1')));
  assert.ok(s.unprivilegedStart >= 0 && s.unprivilegedStart <= 65535);
});
