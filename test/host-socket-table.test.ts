import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { formatIPv6 } from '../src/host/proc-net-address.js';
import { parseTcpTable, portsInUse, tcpStateName } from '../src/host/socket-table.js';
import type { SocketRow } from '../src/host/host-map.js';

const fixture = (p: string) => readFileSync(fileURLToPath(new URL(`./fixtures/${p}`, import.meta.url)), 'latin1');
// The fixture rows were captured on x86_64; pin the byte order so the test means the same anywhere.
const LE = { littleEndian: true };

const HEADER4 =
  '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode                                                     ';

const r = (
  family: 4 | 6, localAddress: string, localPort: number, remoteAddress: string, remotePort: number,
  state: SocketRow['state'], uid: number, inode: number,
): SocketRow => ({ protocol: 'tcp', family, localAddress, localPort, remoteAddress, remotePort, state, uid, inode });

test('tcp fixture: every real row parsed, every damaged line skipped and counted', () => {
  const t = parseTcpTable(fixture('proc-basic/net/tcp'), 4, LE);
  assert.deepEqual(t.rows, [
    r(4, '127.0.0.1', 41005, '0.0.0.0', 0, 'LISTEN', 0, 9232),
    r(4, '127.0.0.1', 41001, '0.0.0.0', 0, 'LISTEN', 0, 9228),
    r(4, '0.0.0.0', 41002, '0.0.0.0', 0, 'LISTEN', 0, 9229),
    r(4, '127.0.0.1', 38484, '127.0.0.1', 41003, 'ESTABLISHED', 0, 9235),
    r(4, '127.0.0.1', 41001, '127.0.0.1', 36520, 'ESTABLISHED', 0, 9234),
    r(4, '127.0.0.1', 49864, '127.0.0.1', 41005, 'TIME_WAIT', 0, 0),
    r(4, '127.0.0.1', 36520, '127.0.0.1', 41001, 'ESTABLISHED', 0, 9233),
    r(4, '0.0.0.0', 41006, '0.0.0.0', 0, 'LISTEN', 1000, 8984),
    // state 0x1F is hex but no state we know: kept, because its port is taken all the same
    r(4, '127.0.0.1', 41009, '0.0.0.0', 0, 'UNKNOWN', 0, 9301),
  ]);
  // garbage, truncated row, state "ZZ", non-hex address, v6-length address; blank lines are not counted
  assert.equal(t.skipped, 5);
});

test('tcp6 fixture: wildcard, loopback and v4-mapped addresses; a row cut mid-address at EOF', () => {
  const t = parseTcpTable(fixture('proc-basic/net/tcp6'), 6, LE);
  assert.deepEqual(t.rows, [
    r(6, '::1', 41004, '::', 0, 'LISTEN', 0, 9231),
    r(6, '::', 41003, '::', 0, 'LISTEN', 0, 9230),
    r(6, '::ffff:127.0.0.1', 41003, '::ffff:127.0.0.1', 38484, 'ESTABLISHED', 0, 9236),
    r(6, '::1', 41056, '::1', 41004, 'ESTABLISHED', 0, 9237),
    r(6, '::1', 41004, '::1', 41056, 'ESTABLISHED', 0, 9238),
  ]);
  assert.equal(t.skipped, 1);
});

test('rows of one family do not parse as the other', () => {
  const v4 = parseTcpTable(fixture('proc-basic/net/tcp6'), 4, LE);
  assert.equal(v4.rows.length, 0);
  assert.equal(v4.skipped, 6);
});

test('header only, empty text, and a table without a trailing newline', () => {
  assert.deepEqual(parseTcpTable('', 4), { rows: [], skipped: 0 });
  assert.deepEqual(parseTcpTable(`${HEADER4}\n`, 4), { rows: [], skipped: 0 });
  const row = '   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12345 1';
  const t = parseTcpTable(`${HEADER4}\n${row}`, 4, LE);
  assert.deepEqual(t.rows, [r(4, '127.0.0.1', 8080, '0.0.0.0', 0, 'LISTEN', 0, 12345)]);
  // a header in the middle of the table is not a header
  assert.equal(parseTcpTable(`${HEADER4}\n${row}\n${HEADER4}\n`, 4, LE).skipped, 1);
});

test('lines truncated at every position are skipped or parsed, never thrown', () => {
  const row = '  12: 0100007F:1F90 0100007F:A3F2 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 20 4 30 10 -1';
  // usable once the inode is complete and a later field shows the row went past it
  const usableFrom = row.indexOf(' 4242 ') + 7;
  // from the first non-blank character on (a line of spaces is blank, not damaged)
  for (let cut = 3; cut < row.length; cut++) {
    const t = parseTcpTable(`${HEADER4}\n${row.slice(0, cut)}\n`, 4, LE);
    assert.equal(t.rows.length + t.skipped, 1, `cut at ${cut}`);
    assert.equal(t.rows.length, cut >= usableFrom ? 1 : 0, `cut at ${cut}: ${row.slice(0, cut)}`);
  }
  const whole = parseTcpTable(`${HEADER4}\n${row}\n`, 4, LE).rows[0];
  assert.deepEqual(whole, r(4, '127.0.0.1', 8080, '127.0.0.1', 41970, 'ESTABLISHED', 1000, 4242));
});

test('address byte order follows the host that wrote the table', () => {
  const row = '   0: 7F000001:0050 0A000002:C000 0A 00000000:00000000 00:00000000 00000000     0        0 7 1\n';
  assert.equal(parseTcpTable(row, 4, { littleEndian: false }).rows[0]?.localAddress, '127.0.0.1');
  assert.equal(parseTcpTable(row, 4, { littleEndian: false }).rows[0]?.remoteAddress, '10.0.0.2');
  assert.equal(parseTcpTable(row, 4, { littleEndian: true }).rows[0]?.localAddress, '1.0.0.127');
  const row6 = '   0: 20010DB8000000000000000000000001:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 8 1\n';
  assert.equal(parseTcpTable(row6, 6, { littleEndian: false }).rows[0]?.localAddress, '2001:db8::1');
  // the same address as a little-endian kernel prints it: each 32-bit word byte-swapped
  const row6le = '   0: B80D0120000000000000000001000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 8 1\n';
  assert.equal(parseTcpTable(row6le, 6, LE).rows[0]?.localAddress, '2001:db8::1');
  // lower-case hex is accepted too
  assert.equal(parseTcpTable(row6le.toLowerCase(), 6, LE).rows[0]?.localAddress, '2001:db8::1');
});

test('formatIPv6 is canonical (RFC 5952)', () => {
  const b = (...groups: number[]) => groups.flatMap((g) => [g >> 8, g & 255]);
  assert.equal(formatIPv6(b(0, 0, 0, 0, 0, 0, 0, 0)), '::');
  assert.equal(formatIPv6(b(0, 0, 0, 0, 0, 0, 0, 1)), '::1');
  assert.equal(formatIPv6(b(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)), '2001:db8::1');
  assert.equal(formatIPv6(b(0x2001, 0xdb8, 0, 0, 1, 0, 0, 1)), '2001:db8::1:0:0:1'); // first of equal runs
  assert.equal(formatIPv6(b(0x2001, 0, 0, 1, 0, 0, 0, 1)), '2001:0:0:1::1'); // longest run wins
  assert.equal(formatIPv6(b(0x2001, 0xdb8, 0, 1, 1, 1, 1, 1)), '2001:db8:0:1:1:1:1:1'); // one zero group stays
  assert.equal(formatIPv6(b(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0)), '2001:db8::');
  assert.equal(formatIPv6(b(0xfe80, 0, 0, 0, 0x1ff, 0xfe23, 0x4567, 0x890a)), 'fe80::1ff:fe23:4567:890a');
  assert.equal(formatIPv6(b(0, 0, 0, 0, 0, 0xffff, 0x0a00, 0x0001)), '::ffff:10.0.0.1');
  assert.equal(formatIPv6(b(0xabcd, 0xef01, 0x2345, 0x6789, 0xabcd, 0xef01, 0x2345, 0x6789)), 'abcd:ef01:2345:6789:abcd:ef01:2345:6789');
});

test('tcpStateName covers the kernel states', () => {
  const names = ['ESTABLISHED', 'SYN_SENT', 'SYN_RECV', 'FIN_WAIT1', 'FIN_WAIT2', 'TIME_WAIT', 'CLOSE', 'CLOSE_WAIT', 'LAST_ACK', 'LISTEN', 'CLOSING', 'NEW_SYN_RECV'];
  names.forEach((n, i) => assert.equal(tcpStateName(i + 1), n));
  assert.equal(tcpStateName(0), 'UNKNOWN');
  assert.equal(tcpStateName(13), 'UNKNOWN');
});

test('a 60,000-row table parses completely', () => {
  const lines = [HEADER4];
  const addrs = ['0100007F', '00000000', '0200000A', '0101A8C0'];
  const states = ['0A', '01', '06', '08'];
  const hex4 = (n: number) => n.toString(16).toUpperCase().padStart(4, '0');
  const N = 60_000;
  for (let i = 0; i < N; i++) {
    const port = 1024 + (i % 60_000);
    lines.push(
      `${String(i).padStart(5)}: ${addrs[i % 4]}:${hex4(port)} ${addrs[(i >> 2) % 4]}:${hex4(40000 + (i % 20000))} ${states[i % 4]} 00000000:00000000 00:00000000 00000000 ${String(i % 3000).padStart(5)}        0 ${i % 4 === 2 ? 0 : 100000 + i} 1 0000000000000000 100 0 0 10 0`,
    );
  }
  const t = parseTcpTable(`${lines.join('\n')}\n`, 4, LE);
  assert.equal(t.skipped, 0);
  assert.equal(t.rows.length, N);
  assert.deepEqual(t.rows[0], r(4, '127.0.0.1', 1024, '127.0.0.1', 40000, 'LISTEN', 0, 100000));
  assert.deepEqual(t.rows[59_999], r(4, '192.168.1.1', 61023, '192.168.1.1', 59999, 'CLOSE_WAIT', 2999, 159_999));
  assert.deepEqual(t.rows[30_002], r(4, '10.0.0.2', 31026, '127.0.0.1', 50002, 'TIME_WAIT', 2, 0));
  assert.equal(portsInUse(t).size, 60_000);
  assert.equal(t.rows.filter((x) => x.state === 'TIME_WAIT').length, N / 4);
});

test('portsInUse counts every state and both families', () => {
  const v4 = parseTcpTable(fixture('proc-basic/net/tcp'), 4, LE);
  const v6 = parseTcpTable(fixture('proc-basic/net/tcp6'), 6, LE);
  const ports = portsInUse([...v4.rows, ...v6.rows]);
  assert.deepEqual([...ports].sort((a, b) => a - b), [36520, 38484, 41001, 41002, 41003, 41004, 41005, 41006, 41009, 41056, 49864]);
  assert.ok(portsInUse(v4).has(49864)); // TIME_WAIT blocks a bind too
});
